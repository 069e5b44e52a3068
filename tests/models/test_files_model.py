from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.cases.model import Case
from pytest_imagetime.engine import runner
from pytest_imagetime.engine.item_error import ItemError
from pytest_imagetime.engine.record import ItemRecord
from pytest_imagetime.engine.run_spec import RunSpec
from pytest_imagetime.engine.runner import (
    generate_sheet,
    judge_sheet,
    stored_outcome,
)
from pytest_imagetime.judges.pixel import PixelJudge
from pytest_imagetime.models.base import GenerationRequest, ModelError
from pytest_imagetime.models.files import FilesModel
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.sheet import METRICS_VERSION, metrics
from pytest_imagetime.store.paths import RunPaths
from tests.builders import make_case


def _request(case: Case) -> GenerationRequest:
    return GenerationRequest(case=case, setting="prompt-only", size=64, seed=1)


def test_reads_any_supported_suffix(tmp_path: Path, case: Case) -> None:
    Image.new("RGBA", (32, 32), (9, 9, 9, 255)).save(tmp_path / f"{case.id}.webp")
    model = FilesModel(str(tmp_path))
    generated = model.generate(request=_request(case))
    assert generated.image.mode == "RGB" and generated.image.size == (32, 32)
    assert generated.details["source"].endswith(".webp")
    assert model.name == f"files:{tmp_path}"


def test_missing_image_names_the_expected_path(tmp_path: Path, case: Case) -> None:
    with pytest.raises(ModelError, match=rf"expected {tmp_path}/{case.id}\.png"):
        FilesModel(str(tmp_path)).generate(request=_request(case))


def test_unreadable_image_is_a_model_error(tmp_path: Path, case: Case) -> None:
    (tmp_path / f"{case.id}.png").write_bytes(b"not a png")
    with pytest.raises(ModelError, match="cannot read"):
        FilesModel(str(tmp_path)).generate(request=_request(case))


def test_needs_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a directory"):
        FilesModel(None)
    with pytest.raises(ValueError, match="is not a directory"):
        FilesModel(str(tmp_path / "missing"))


def test_input_token_changes_when_the_file_changes(tmp_path: Path, case: Case) -> None:
    path = tmp_path / f"{case.id}.png"
    Image.new("RGB", (8, 8)).save(path)
    model = FilesModel(str(tmp_path))
    before = model.input_token(request=_request(case))
    Image.new("RGB", (9, 9), (200, 0, 0)).save(path)
    assert model.input_token(request=_request(case)) != before


def _spec(source: Path, out: Path) -> RunSpec:
    judge = PixelJudge()
    model = FilesModel(str(source))
    return RunSpec(model=model, judge=judge,
                   paths=RunPaths(out, model.name, judge.name, "prompt-only"),
                   setting="prompt-only", size=64, run_seed=0)


def _sheet_png(path: Path, mode: str) -> None:
    image = ProceduralModel().generate(request=GenerationRequest(
        case=make_case(), setting="prompt-only", size=64, seed=3)).image
    image.convert(mode).save(path)


@pytest.mark.parametrize(("mode", "suffix", "kept"), [("RGB", ".png", True),
                                                      ("RGBA", ".png", False),
                                                      ("RGB", ".jpg", False)])
def test_rgb_pngs_are_stored_as_delivered(tmp_path: Path, mode: str, suffix: str,
                                          kept: bool) -> None:
    case = make_case()
    source = tmp_path / "in" / f"{case.id}{suffix}"
    source.parent.mkdir()
    _sheet_png(source, mode)
    spec = _spec(source.parent, tmp_path / "out")
    sheet = generate_sheet(spec, case)
    stored = spec.paths.image(case.id).read_bytes()
    assert (stored == source.read_bytes()) is kept
    assert sheet.sha256 == hashlib.sha256(stored).hexdigest()
    with Image.open(spec.paths.image(case.id)) as reread:
        assert reread.mode == "RGB"
        assert reread.tobytes() == sheet.image.tobytes()


def _one_sheet_run(tmp_path: Path) -> tuple[RunSpec, Case, ItemRecord]:
    """The files model over one RGB PNG sheet, with the record its item starts from."""
    case = make_case()
    source = tmp_path / "in" / f"{case.id}.png"
    source.parent.mkdir()
    _sheet_png(source, "RGB")
    spec = _spec(source.parent, tmp_path / "out")
    base = ItemRecord(key="k", case_id=case.id, case_file="c.yaml", domain=case.domain,
                      subcategory="s", concept="c", difficulty=case.difficulty,
                      variant=case.variant, probed_levels=(), constraint=False,
                      model=spec.model.name, judge="pixel", setting="prompt-only",
                      run_dir=str(spec.paths.run_dir))
    return spec, case, base


def test_a_resumed_judged_item_never_reads_its_sheet(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    spec, case, base = _one_sheet_run(tmp_path)
    first = judge_sheet(spec, case, base, generate_sheet(spec, case))
    decodes: list[bytes] = []
    monkeypatch.setattr(runner, "decode_png", lambda data: decodes.append(data))
    read_bytes = Path.read_bytes

    def unread(self: Path) -> bytes:
        if self.suffix == ".png":  # the records are read, the sheet must not be
            pytest.fail(f"{self} was read")
        return read_bytes(self)

    with monkeypatch.context() as patched:
        patched.setattr(Path, "read_bytes", unread)
        again = judge_sheet(spec, case, base, generate_sheet(spec, case))
    assert decodes == []
    assert (again.record.generated, again.record.judged) == (False, False)
    assert again.record.scores == first.record.scores


def test_a_sheet_changed_after_its_check_is_an_error_not_a_judgment(tmp_path: Path) -> None:
    spec, case, base = _one_sheet_run(tmp_path)
    generate_sheet(spec, case)  # stored, not judged yet
    sheet = generate_sheet(spec, case)  # checked by its size and time, not read
    path = spec.paths.image(case.id)
    stamp = path.stat()
    path.write_bytes(path.read_bytes()[:-4] + b"\0\0\0\0")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    with pytest.raises(ItemError, match=rf"cannot read the stored sheet {path}: .*changed"):
        judge_sheet(spec, case, base, sheet)
    assert not spec.paths.judgment(case.id).exists()


def test_stored_outcome_is_the_judged_outcome_and_none_until_judged(tmp_path: Path) -> None:
    spec, case, base = _one_sheet_run(tmp_path)
    assert stored_outcome(spec, case, base, generate_sheet(spec, case)) is None
    judged = judge_sheet(spec, case, base, generate_sheet(spec, case))
    reused = stored_outcome(spec, case, base, generate_sheet(spec, case))
    assert reused is not None and not reused.record.judged
    assert reused.record == replace(judged.record, judged=False)
    assert stored_outcome(replace(spec, rejudge=True), case, base,
                          generate_sheet(spec, case)) is None


def _earlier_run(tmp_path: Path) -> tuple[Path, Case]:
    """Sheets an earlier run stored: PNGs with their records beside them."""
    case = make_case()
    model = ProceduralModel()
    judge = PixelJudge()
    spec = RunSpec(model=model, judge=judge,
                   paths=RunPaths(tmp_path / "earlier", model.name, judge.name, "prompt-only"),
                   setting="prompt-only", size=64, run_seed=0)
    generate_sheet(spec, case)
    return spec.paths.image(case.id).parent, case


def _counting_analyze(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = metrics.analyze

    def counted(image: Image.Image) -> Any:
        calls.append(1)
        return real(image)

    monkeypatch.setattr(metrics, "analyze", counted)
    return calls


def test_facts_recorded_beside_the_same_bytes_are_reused(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    images, case = _earlier_run(tmp_path)
    earlier = json.loads((images / f"{case.id}.json").read_text())
    calls = _counting_analyze(monkeypatch)
    spec = _spec(images, tmp_path / "out")
    sheet = generate_sheet(spec, case)
    assert calls == []
    assert sheet.record["pixel_metrics"] == earlier["pixel_metrics"]
    assert sheet.sha256 == earlier["image_sha256"]


@pytest.mark.parametrize("damage", ["other bytes", "old version", "not a record"])
def test_facts_are_measured_when_the_record_does_not_fit(tmp_path: Path, damage: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    images, case = _earlier_run(tmp_path)
    record_path = images / f"{case.id}.json"
    record = json.loads(record_path.read_text())
    if damage == "other bytes":
        with Image.open(images / f"{case.id}.png") as image:
            image.rotate(90).save(images / f"{case.id}.png")
    elif damage == "old version":
        record["pixel_metrics"]["version"] = "0"
        record_path.write_text(json.dumps(record))
    else:
        record_path.write_text("[1, 2")
    calls = _counting_analyze(monkeypatch)
    sheet = generate_sheet(_spec(images, tmp_path / "out"), case)
    assert calls == [1]
    assert sheet.record["pixel_metrics"]["version"] == METRICS_VERSION


def test_a_truncated_png_is_a_model_error(tmp_path: Path) -> None:
    images, case = _earlier_run(tmp_path)
    path = images / f"{case.id}.png"
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(ModelError, match="cannot read"):
        FilesModel(str(images)).generate(request=_request(case))


def test_a_sheet_that_cannot_be_stored_is_an_item_error(tmp_path: Path) -> None:
    images, case = _earlier_run(tmp_path)
    spec = _spec(images, tmp_path / "out")
    spec.paths.model_dir.mkdir(parents=True)
    (spec.paths.model_dir / "images").write_text("a file where the images folder goes")
    with pytest.raises(ItemError, match=rf"cannot store the sheet of {case.id} in "):
        generate_sheet(spec, case)


def test_a_non_square_sheet_is_recorded_counted_and_shown(pytester: pytest.Pytester) -> None:
    """The protocol's sheet is square: another shape is scored, but said so everywhere."""
    from tests.builders import case_dict, write_case_file

    write_case_file(pytester.path / "k.yaml", [case_dict("kitchen-pour-water-1"),
                                               case_dict("kitchen-pour-water-2", variant=2)])
    sheets = pytester.mkdir("sheets")
    Image.new("RGB", (128, 128), (90, 60, 160)).save(sheets / "kitchen-pour-water-1.png")
    Image.new("RGB", (192, 128), (90, 60, 160)).save(sheets / "kitchen-pour-water-2.png")
    result = pytester.runpytest("k.yaml", "--imagetime-model=files:sheets",
                                "--imagetime-judge=pixel", "--imagetime-html=html")
    result.assert_outcomes(failed=2)  # flat images: the pixel judge fails them, none errs
    result.stdout.fnmatch_lines(["*files:sheets*: sheets not square: 1 (the protocol's sheet "
                                 "is square; their items say square: false in report.json)"])
    (path,) = (pytester.path / "reports").rglob("report.json")
    images = path.parent.parent / "images"
    wide = json.loads((images / "kitchen-pour-water-2.json").read_text())
    assert (wide["width"], wide["height"], wide["square"]) == (192, 128, False)
    assert "square" not in json.loads((images / "kitchen-pour-water-1.json").read_text())
    report = json.loads(path.read_text())
    from pytest_imagetime.report.json_report import validate_report

    validate_report(report)
    assert {i["case_id"]: i["square"] for i in report["items"]} == {
        "kitchen-pour-water-1": True, "kitchen-pour-water-2": False}
    assert report["coverage"]["non_square"] == 1
    pages = "".join(p.read_text() for p in (pytester.path / "html").rglob("*.html"))
    assert pages.count(">not square</span>") == 1
