"""Stored data stays trustworthy: damaged judgments and sheets, duplicate case ids, files
left by a killed run, and two sessions writing one output directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, write_case_file


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")


ARGS = ("kitchen.yaml", "--imagetime-model=procedural", "--imagetime-size=128")


def _two_cases(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [
        case_dict("kitchen-pour-water-1"),
        case_dict("kitchen-pour-water-2", variant=2,
                  setup={"scene": "a marble counter", "style": "flat illustration",
                         "camera": "top-down view"})])


def _report(pytester: pytest.Pytester) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(
        (pytester.path / "reports/procedural/pixel/report.json").read_text())
    validate_report(report)
    return report


def _damage(judgment: dict[str, Any], how: str) -> None:
    if how == "score":
        judgment["scores"]["C0"] = "ten"
    elif how == "range":
        judgment["scores"]["C0"] = 11
    elif how == "cost":
        judgment["cost_usd"] = "free"
    elif how == "labels":
        judgment["labels"] = [3]
    elif how == "predicates":
        judgment["predicates"] = ["yes"]
    elif how == "scores-list":
        judgment["scores"] = [10, 9]


@pytest.mark.parametrize("how", ["score", "range", "cost", "labels", "predicates",
                                 "scores-list"])
def test_a_stored_judgment_with_wrong_types_is_judged_again_with_a_warning(
        pytester: pytest.Pytester, how: str) -> None:
    _two_cases(pytester)
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)
    path = pytester.path / "reports/procedural/pixel/judgments/kitchen-pour-water-1.json"
    stored = json.loads(path.read_text())
    _damage(stored["judgment"], how)
    path.write_text(json.dumps(stored))

    again = pytester.runpytest(*ARGS)
    again.assert_outcomes(passed=2, warnings=1)
    again.stdout.fnmatch_lines([f"*StoredDataWarning: the stored judgment {path} cannot be "
                                f"trusted (*): judging kitchen-pour-water-1 again"])
    judged = {i["case_id"]: i["judged"] for i in _report(pytester)["items"]}
    assert judged == {"kitchen-pour-water-1": True, "kitchen-pour-water-2": False}
    assert json.loads(path.read_text())["judgment"]["scores"]["C0"] in range(11)

    third = pytester.runpytest(*ARGS)
    third.assert_outcomes(passed=2)  # trusted again: no warning, nothing judged
    assert not any(i["judged"] for i in _report(pytester)["items"])


def test_a_damaged_judgment_is_judged_again_under_xdist(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)
    path = pytester.path / "reports/procedural/pixel/judgments/kitchen-pour-water-2.json"
    stored = json.loads(path.read_text())
    _damage(stored["judgment"], "score")
    path.write_text(json.dumps(stored))
    again = pytester.runpytest_subprocess(*ARGS, "-n", "2")
    again.assert_outcomes(passed=2, warnings=1)
    assert "cannot be trusted" in again.stdout.str()


# ------------------------------------------------------------------ a PNG whose data is broken

def broken_png(size: int = 128) -> bytes:
    """A PNG whose every chunk CRC checks out but whose image data holds a third of the
    rows: Pillow's verify() passes it, decoding fails."""
    import io
    import struct
    import zlib

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), (120, 40, 200)).save(buffer, format="PNG")
    data = buffer.getvalue()
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        chunks.append((data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]))
        pos += 12 + length
    rows = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    out, wrote = bytearray(data[:8]), False
    for kind, body in chunks:
        if kind == b"IDAT":
            if wrote:
                continue
            body, wrote = zlib.compress(rows[:len(rows) // 3]), True
        crc = struct.pack(">I", zlib.crc32(kind + body))
        out += struct.pack(">I", len(body)) + kind + body + crc
    return bytes(out)


def test_the_broken_png_passes_pillows_check_and_fails_decoding(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "broken.png"
    path.write_bytes(broken_png())
    with Image.open(path) as opened:
        opened.verify()
    with Image.open(path) as opened, pytest.raises(OSError, match="truncated"):
        opened.load()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_png_with_broken_image_data_is_an_item_error_naming_the_file(
        pytester: pytest.Pytester, workers: list[str]) -> None:
    _two_cases(pytester)
    sheets = pytester.mkdir("sheets")
    (sheets / "kitchen-pour-water-1.png").write_bytes(broken_png())
    from PIL import Image

    Image.new("RGB", (96, 96), (10, 10, 10)).save(sheets / "kitchen-pour-water-2.png")
    result = pytester.runpytest_subprocess("kitchen.yaml", "--imagetime-model=files:sheets",
                                           "--imagetime-pass-threshold=0", *workers)
    outcomes = result.parseoutcomes()
    assert outcomes["errors"] == 1 and outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1
    reason = ("cannot decode the file sheets/kitchen-pour-water-1.png for kitchen-pour-water-1: "
              "its image data is broken (image file is truncated*)")
    result.stdout.fnmatch_lines([f"ERROR kitchen.yaml::kitchen-pour-water-1[[]files:sheets[]] "
                                 f"- {reason}"])
    assert "Traceback" not in result.stdout.str() and "metrics.py" not in result.stdout.str()
    report = json.loads((pytester.path / "reports/files-sheets/pixel/report.json").read_text())
    validate_report(report)
    (error,) = report["errors"]
    assert error["reason"].startswith("cannot decode the file sheets/kitchen-pour-water-1.png")


# ------------------------------------------------------------------ one case id, two files

@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_same_case_id_in_two_case_files_is_a_collection_error_naming_both(
        pytester: pytest.Pytester, workers: list[str]) -> None:
    _two_cases(pytester)
    write_case_file(pytester.path / "more.yaml", [
        case_dict("kitchen-pour-water-9"),
        case_dict("kitchen-pour-water-2", setup={"scene": "a steel counter",
                                                 "style": "photorealistic",
                                                 "camera": "fixed side view"})])
    result = pytester.runpytest_subprocess("kitchen.yaml", "more.yaml",
                                           "--imagetime-model=procedural",
                                           "--imagetime-size=128", *workers)
    result.stdout.fnmatch_lines([
        "more.yaml:*: case 'kitchen-pour-water-2': field 'id': this case id is also defined "
        "in kitchen.yaml:*; case ids must be unique across the case files of a run*"])
    if workers:  # xdist runs what its workers collected, and fails the session
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert result.parseoutcomes()["errors"] == 1
        return
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "passed" not in result.stdout.str()
    assert not (pytester.path / "reports").exists()


def test_distinct_case_ids_across_files_collect_as_before(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    write_case_file(pytester.path / "more.yaml", [case_dict("kitchen-pour-water-9")])
    result = pytester.runpytest("kitchen.yaml", "more.yaml", "--imagetime-model=procedural",
                                "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert "3 tests collected" in result.stdout.str()
