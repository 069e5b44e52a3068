"""A model without packaging: named by a conftest.py through
``pytest_imagetime_register_models``, or by ``--imagetime-model=python:MODULE:ATTRIBUTE``."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.builders import case_dict, write_case_file

# The ten-line model of docs/models.md, plus a record of which process drew what.
MODULE = '''
import json, os
from PIL import Image
from pytest_imagetime.models.base import Generated


class Flat:
    def __init__(self, argument=None):
        self.shade = int(argument or 90)
        self.name = f"flat-{self.shade}"

    def config(self):
        return {"shade": self.shade}

    def generate(self, *, request):
        with open(os.environ["FLAT_LOG"], "a") as log:
            log.write(json.dumps([os.environ.get("PYTEST_XDIST_WORKER"), request.case.id]) + "\\n")
        return Generated(Image.new("RGB", (request.size, request.size), (self.shade, 60, 160)))


def make_flat(argument=None):
    return Flat(argument)


def broken(argument=None):
    raise RuntimeError("no checkpoint " + str(argument))


NOT_CALLABLE = 3
'''

CONFTEST = '''
from my_models import Flat


def pytest_imagetime_register_models(register):
    register("flat", Flat)
'''


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    (pytester.path / "my_models.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.setenv("FLAT_LOG", str(pytester.path / "calls.jsonl"))
    write_case_file(pytester.path / "k.yaml", [case_dict(f"kitchen-pour-water-{n}", variant=n)
                                               for n in (1, 2)] +
                    [case_dict("kitchen-boil-water-1", concept="boil water", variant=1)])
    return pytester


def _drawn(pytester: pytest.Pytester) -> list[list[str | None]]:
    path = pytester.path / "calls.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _record(pytester: pytest.Pytester, run: str) -> dict[str, object]:
    record: dict[str, object] = json.loads(
        (pytester.path / "reports" / run / "images/kitchen-pour-water-1.json").read_text())
    return record


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_conftest_registers_a_model(project: pytest.Pytester, workers: list[str]) -> None:
    project.makeconftest(CONFTEST)
    args = ["k.yaml", "--imagetime-model=flat:120", "--imagetime-judge=pixel",
            "--imagetime-size=128", "-p", "no:cacheprovider", *workers]
    run = project.runpytest_subprocess if workers else project.runpytest
    run(*args).assert_outcomes(failed=3)  # flat images: the pixel judge fails them, none errs
    drawn = _drawn(project)
    assert sorted(str(case) for _, case in drawn) == [
        "kitchen-boil-water-1", "kitchen-pour-water-1", "kitchen-pour-water-2"]
    if workers:  # each worker resolved the name through its own conftest.py
        assert {worker for worker, _ in drawn} == {"gw0", "gw1"}
    assert _record(project, "flat-120")["model_config"] == {"shade": 120}
    run(*args).assert_outcomes(failed=3)
    assert len(_drawn(project)) == 3  # resumed like any backend


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_python_spec_names_a_factory(project: pytest.Pytester, workers: list[str]) -> None:
    args = ["k.yaml", "--imagetime-model=python:my_models:make_flat:200",
            "--imagetime-judge=pixel", "--imagetime-size=128", *workers]
    run = project.runpytest_subprocess if workers else project.runpytest
    run(*args).assert_outcomes(failed=3)
    assert len(_drawn(project)) == 3
    assert _record(project, "flat-200")["model_config"] == {"shade": 200}


@pytest.mark.parametrize(("spec", "message"), [
    ("python:no_such_module:make", "*module 'no_such_module' not found*"),
    ("python:my_models:missing", "*module 'my_models' has no attribute 'missing'*"),
    ("python:my_models:NOT_CALLABLE", "*my_models:NOT_CALLABLE is not callable (int)*"),
    ("python:my_models:broken:v2", "*the factory my_models:broken raised RuntimeError: "
                                   "no checkpoint v2*"),
    ("python:my_models", "*no attribute given*"),
])
def test_a_bad_python_spec_says_what_failed(project: pytest.Pytester, spec: str,
                                            message: str) -> None:
    result = project.runpytest("k.yaml", f"--imagetime-model={spec}", "--imagetime-judge=pixel")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--imagetime-model={spec}: {message.lstrip('*')}"])
    form = "the accepted form is python:MODULE:ATTRIBUTE[:ARGUMENT]"
    assert (form in result.stderr.str()) is ("raised" not in message)


def test_a_registered_name_cannot_take_a_built_in_one(project: pytest.Pytester) -> None:
    project.makeconftest(CONFTEST.replace('"flat"', '"procedural"'))
    result = project.runpytest("k.yaml", "--imagetime-model=procedural",
                               "--imagetime-judge=pixel")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest_imagetime_register_models: procedural: a built-in "
                                 "model has this name*"])


def test_an_unknown_name_lists_the_registered_ones(project: pytest.Pytester) -> None:
    project.makeconftest(CONFTEST)
    result = project.runpytest("k.yaml", "--imagetime-model=flatt", "--imagetime-judge=pixel")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown model 'flatt'; available: bfl, diffusers, files, flat,*"
                                 "python:MODULE:ATTRIBUTE?:ARGUMENT?)"])
