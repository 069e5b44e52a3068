"""The scaffold setting: references from a folder or drawn once by a model, completed by an
edit-capable backend, and shown to the judge so that C1 is scored."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.cases.loading import load_case_file
from pytest_imagetime.engine.references import GeneratedReferences, ReferenceDir, ReferenceError
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.report.json_report import validate_report
from pytest_imagetime.sheet.geometry import panel_boxes
from pytest_imagetime.sheet.prompts import SCAFFOLD_NOTE, reference_prompt
from tests.builders import case_dict, make_case, write_case_file
from tests.fake_openai import ChatServer, chat_server

CASES = [case_dict("kitchen-pour-water-1"), case_dict("kitchen-pour-water-2", variant=2)]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as running:
        yield running


def _run(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    write_case_file(pytester.path / "k.yaml", CASES)
    return pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
                              "--imagetime-setting=scaffold", *extra)


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    validate_report(report)
    return report


def test_a_reference_folder_goes_into_the_top_left_cell(pytester: pytest.Pytester) -> None:
    refs = pytester.mkdir("refs")
    for n, colour in ((1, (200, 30, 30)), (2, (30, 30, 200))):
        Image.new("RGB", (300, 300), colour).save(refs / f"kitchen-pour-water-{n}.png")
    # Flat colour cells read as blank panels to the pixel judge: the items fail, but they ran.
    _run(pytester, "--imagetime-judge=pixel", "--imagetime-reference-dir=refs"
         ).assert_outcomes(failed=2)
    sheet = Image.open(pytester.path / "reports/procedural@scaffold/images/"
                       "kitchen-pour-water-1.png").convert("RGB")
    box = panel_boxes(128)[0]
    assert sheet.getpixel((box.left + 10, box.top + 10)) == (200, 30, 30)
    record = json.loads((pytester.path / "reports/procedural@scaffold/images/"
                         "kitchen-pour-water-1.json").read_text())
    assert record["reference"]["source"].endswith("kitchen-pour-water-1.png")
    assert record["prompt"].endswith(SCAFFOLD_NOTE)
    # A changed reference draws the sheet again; an unchanged one is reused.
    _run(pytester, "--imagetime-judge=pixel", "--imagetime-reference-dir=refs")
    again = json.loads((pytester.path / "reports/procedural@scaffold/images/"
                        "kitchen-pour-water-1.json").read_text())
    assert again["date"] == record["date"] and again["input_key"] == record["input_key"]
    Image.new("RGB", (300, 300), (30, 200, 30)).save(refs / "kitchen-pour-water-1.png")
    _run(pytester, "--imagetime-judge=pixel", "--imagetime-reference-dir=refs")
    changed = json.loads((pytester.path / "reports/procedural@scaffold/images/"
                          "kitchen-pour-water-1.json").read_text())
    assert changed["input_key"] != record["input_key"]


def test_a_missing_reference_is_an_item_error_naming_the_file(pytester: pytest.Pytester) -> None:
    refs = pytester.mkdir("refs")
    Image.new("RGB", (64, 64)).save(refs / "kitchen-pour-water-1.png")
    result = _run(pytester, "--imagetime-judge=pixel", "--imagetime-reference-dir=refs")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*no reference image for case 'kitchen-pour-water-2': "
                                 "expected */refs/kitchen-pour-water-2.png*"])


def test_references_drawn_by_a_model_are_kept_and_reused(pytester: pytest.Pytester) -> None:
    _run(pytester, "--imagetime-judge=pixel", "--imagetime-reference-model=procedural",
         "--imagetime-model=procedural:copied").assert_outcomes(passed=2, failed=2)
    refs = pytester.path / "reports/_references/procedural/images"
    assert sorted(p.name for p in refs.glob("*.png")) == ["kitchen-pour-water-1.png",
                                                          "kitchen-pour-water-2.png"]
    record = json.loads((refs / "kitchen-pour-water-1.json").read_text())
    (case, _) = load_case_file(pytester.path / "k.yaml")
    assert record["prompt"] == reference_prompt(case)
    stamp = (refs / "kitchen-pour-water-1.png").stat().st_mtime_ns
    _run(pytester, "--imagetime-judge=pixel", "--imagetime-reference-model=procedural")
    assert (refs / "kitchen-pour-water-1.png").stat().st_mtime_ns == stamp


def test_the_judge_sees_the_reference_and_scores_c1(pytester: pytest.Pytester,
                                                    server: ChatServer,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    _run(pytester, "--imagetime-judge=vlm", f"--imagetime-judge-base-url={server.base_url}",
         "--imagetime-reference-model=procedural", "--imagetime-judge-price=1,1"
         ).assert_outcomes(passed=2)
    request = server.state.requests[0]
    images = [part for part in request["messages"][1]["content"]
              if part["type"] == "image_url"]
    assert len(images) == 2  # the reference, then the sheet
    reference = Image.open(io.BytesIO(base64.b64decode(
        images[0]["image_url"]["url"].split(",", 1)[1])))
    assert reference.size == (128, 128)
    report = _report(pytester.path / "reports/procedural@scaffold/vlm/report.json")
    assert all(item["scores"]["C1"] is not None for item in report["items"])
    assert report["manifest"]["setting"] == "scaffold"


@pytest.mark.parametrize(("args", "message"), [
    ([], "*the scaffold setting needs reference images: --imagetime-reference-dir=DIR*"),
    (["--imagetime-reference-dir=nowhere"], "*--imagetime-reference-dir=*nowhere: not a "
                                            "directory*"),
    (["--imagetime-reference-dir=.", "--imagetime-reference-model=procedural"],
     "*give either --imagetime-reference-dir or --imagetime-reference-model, not both*"),
    (["--imagetime-reference-model=nope"], "*--imagetime-reference-model=nope: unknown model*"),
])
def test_scaffold_usage_errors(pytester: pytest.Pytester, args: list[str],
                               message: str) -> None:
    result = _run(pytester, "--imagetime-judge=pixel", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_backend_without_references_cannot_take_a_scaffold(pytester: pytest.Pytester) -> None:
    site = pytester.mkdir("site")
    (site / "textonly.py").write_text(
        "class TextOnly:\n    name = 'text-only'\n    def __init__(self, argument=None):\n"
        "        pass\n    def config(self):\n        return {}\n"
        "    def generate(self, *, request):\n        raise AssertionError\n")
    info = site / "textonly-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: textonly\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[imagetime.models]\ntext-only = textonly:TextOnly\n")
    pytester.syspathinsert(site)
    result = _run(pytester, "--imagetime-judge=pixel", "--imagetime-model=text-only",
                  "--imagetime-reference-model=procedural")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--imagetime-model=text-only: this backend cannot complete a "
                                 "scaffold*flux-kontext, qwen-image-edit, flux2-dev, "
                                 "openai-images*"])


def test_reference_sources(tmp_path: Path) -> None:
    case = make_case()
    (tmp_path / f"{case.id}.png").write_bytes(b"not a png")
    with pytest.raises(ReferenceError, match="cannot read the reference"):
        ReferenceDir(tmp_path).get(case)
    drawn = GeneratedReferences(ProceduralModel(), tmp_path / "out", 96, lambda _id: 7)
    first = drawn.get(case)
    assert first.image.size == (96, 96)
    assert drawn.get(case).sha256 == first.sha256  # read back, not drawn again
    assert drawn.describe()["model"] == "procedural"
