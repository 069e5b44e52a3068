"""``gate/runs.py``: the ``imagetime compare`` runner on small report files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.gate.runs import compare
from pytest_imagetime.rubric.facts import LEVEL_KEYS


def _report(overall: float | None, spec: str = "procedural") -> dict[str, Any]:
    tree = dict.fromkeys(("gate", *LEVEL_KEYS))
    return {"manifest": {"judge": {"name": "pixel", "config": {}}, "setting": "s",
                         "model": {"spec": spec}},
            "rubric_version": "r",
            "items": [{"case_id": "a", "status": "passed", "overall": overall, "tree": tree}],
            "aggregate": {"overall": overall, "dims": {},
                          "tree": dict.fromkeys(("gate", *LEVEL_KEYS))}}


def _write(path: Path, report: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


def _args(baseline: Path, current: Path, **given: Any) -> argparse.Namespace:
    values: dict[str, Any] = {"max_drop": None, "min": None, "significant": False,
                              "allow_judge_change": False}
    values.update(given)
    return argparse.Namespace(baseline=str(baseline), current=str(current), **values)


def test_equal_report_files_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = _write(tmp_path / "base.json", _report(7.0))
    now = _write(tmp_path / "now.json", _report(7.0))
    assert compare(_args(base, now, max_drop="overall:0.5")) == 0
    assert "procedural" in capsys.readouterr().out


def test_a_drop_past_the_limit_breaches(tmp_path: Path) -> None:
    base = _write(tmp_path / "base.json", _report(7.0))
    now = _write(tmp_path / "now.json", _report(5.0))
    assert compare(_args(base, now, max_drop="overall:0.5")) == 1


def test_a_floor_breaches(tmp_path: Path) -> None:
    base = _write(tmp_path / "base.json", _report(7.0))
    now = _write(tmp_path / "now.json", _report(4.0))
    assert compare(_args(base, now, min="overall:5")) == 1


def test_run_directories_are_read_through_their_report_json(tmp_path: Path) -> None:
    _write(tmp_path / "base" / "report.json", _report(7.0))
    _write(tmp_path / "now" / "report.json", _report(7.0))
    assert compare(_args(tmp_path / "base", tmp_path / "now")) == 0


def test_an_output_directory_is_compared_run_by_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for side, score in (("base", 7.0), ("now", 4.0)):
        _write(tmp_path / side / "model-a" / "pixel" / "report.json", _report(score))
    assert compare(_args(tmp_path / "base", tmp_path / "now", min="overall:5")) == 1
    assert "model-a/pixel" in capsys.readouterr().out


def test_a_bad_threshold_is_a_usage_error(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    base = _write(tmp_path / "base.json", _report(7.0))
    assert compare(_args(base, base, max_drop="nonsense")) == 2
    assert capsys.readouterr().err.startswith("imagetime compare: ")


def test_a_folder_without_reports_is_named(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    base = _write(tmp_path / "base.json", _report(7.0))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert compare(_args(base, empty)) == 2
    assert capsys.readouterr().err == f"imagetime compare: no report.json in {empty}\n"
    assert compare(_args(empty, base)) == 2
    assert f"no report.json in {empty}" in capsys.readouterr().err
