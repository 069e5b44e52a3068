"""A third-party model package: found through the ``imagetime.models`` entry points, given the
run's model options, batched when it batches, and resumed like a built-in backend."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.builders import case_dict, write_case_file

# The in-house backend of docs/models.md, plus a record of what it was given.
MODULE = '''
import json, os
from PIL import Image
from pytest_imagetime.models.base import Generated, ModelOptions

LOG = os.environ["INHOUSE_LOG"]


class InHouseModel:
    def __init__(self, argument=None, *, options=None):
        self.checkpoint = argument or "latest"
        self.options = options or ModelOptions()

    @property
    def name(self):
        return f"inhouse:{self.checkpoint}"

    def config(self):
        return {"checkpoint": self.checkpoint}

    def generate(self, *, request):
        return self.generate_batch(requests=[request])[0]

    def generate_batch(self, *, requests):
        with open(LOG, "a") as log:
            log.write(json.dumps({"cases": [r.case.id for r in requests],
                                  "device": self.options.device(),
                                  "batch_size": self.options.batch_size,
                                  "worker": os.environ.get("PYTEST_XDIST_WORKER")}) + "\\n")
        return [Generated(Image.new("RGB", (r.size, r.size), (r.seed % 256, 90, 160)),
                          {"checkpoint": self.checkpoint}) for r in requests]
'''


@pytest.fixture
def installed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    site = pytester.mkdir("site")
    (site / "inhouse_models.py").write_text(textwrap.dedent(MODULE))
    info = site / "inhouse_models-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: inhouse-models\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[imagetime.models]\ninhouse = inhouse_models:InHouseModel\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("INHOUSE_LOG", str(pytester.path / "calls.jsonl"))
    write_case_file(pytester.path / "k.yaml", [case_dict(f"kitchen-pour-water-{n}", variant=n)
                                               for n in (1, 2)] +
                    [case_dict("kitchen-boil-water-1", concept="boil water", variant=1)])


def _calls(pytester: pytest.Pytester) -> list[dict[str, object]]:
    path = pytester.path / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_model_package_runs_batched_with_its_options(pytester: pytest.Pytester,
                                                       installed: None) -> None:
    args = ["k.yaml", "--imagetime-model=inhouse:v7", "--imagetime-judge=pixel",
            "--imagetime-size=128", "--imagetime-batch-size=2", "--imagetime-devices=cpu"]
    result = pytester.runpytest(*args)
    result.assert_outcomes(failed=3)  # flat images: the pixel judge fails them, none errs
    calls = _calls(pytester)
    assert [len(c["cases"]) for c in calls] == [2, 1]  # type: ignore[arg-type]
    assert {(c["device"], c["batch_size"]) for c in calls} == {("cpu", 2)}
    record = json.loads((pytester.path / "reports/inhouse-v7/images/"
                         "kitchen-pour-water-1.json").read_text())
    assert record["model_config"] == {"checkpoint": "v7"} and record["batch"] == 2
    pytester.runpytest(*args).assert_outcomes(failed=3)
    assert len(_calls(pytester)) == 2  # resumed: nothing drawn again


def test_each_xdist_worker_takes_its_own_device(pytester: pytest.Pytester,
                                                installed: None) -> None:
    result = pytester.runpytest_subprocess(
        "k.yaml", "--imagetime-model=inhouse", "--imagetime-judge=pixel",
        "--imagetime-size=128", "--imagetime-devices=cuda:0,cuda:1", "-n", "2")
    result.assert_outcomes(failed=3)
    devices = {(c["worker"], c["device"]) for c in _calls(pytester)}
    assert devices == {("gw0", "cuda:0"), ("gw1", "cuda:1")}


def test_bad_device_and_batch_options(pytester: pytest.Pytester, installed: None) -> None:
    for option, message in (("--imagetime-devices=gpu0", "*'gpu0' is not a device; use auto, "
                                                         "cpu, mps, or GPU numbers*"),
                            ("--imagetime-batch-size=0", "*--imagetime-batch-size=0: give an "
                                                         "integer from 1 to 1024*")):
        result = pytester.runpytest("k.yaml", "--imagetime-model=inhouse", option)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([message])
