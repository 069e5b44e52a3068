"""``report/runs.py``: the ``summary``, ``merge`` and ``report`` runners' inputs, exit codes
and messages."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.report.runs import merge, report, summary
from pytest_imagetime.rubric.facts import LEVEL_KEYS


def _report(spec: str) -> dict[str, Any]:
    tree: dict[str, float | None] = dict.fromkeys(("gate", *LEVEL_KEYS), 6.0)
    return {"manifest": {"setting": "prompt-only", "model": {"spec": spec},
                         "judge": {"name": "pixel", "config": {}}},
            "aggregate": {"n": 4, "passed": 3, "failed": 1, "errors": 0, "c_mean": 7.0,
                          "d_mean": None, "overall": 7.5, "gate_pass_rate": 0.75,
                          "tree": tree, "cost_usd": 0.0, "judged": 4},
            "spent_usd": 0.0,
            "coverage": {"cases": 4, "suite": {"name": "imagetime", "cases": 4},
                         "complete": True, "shard": None}}


def _write(path: Path, spec: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_report(spec)), encoding="utf-8")
    return path


def test_summary_reads_report_files_and_run_directories(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = _write(tmp_path / "one.json", "procedural")
    _write(tmp_path / "two" / "report.json", "files:ckpt")
    assert summary(argparse.Namespace(runs=[str(one), str(tmp_path / "two")])) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split()[0] == "model"
    assert [r.split()[0] for r in rows[2:4]] == ["procedural", "files:ckpt"]


@pytest.mark.parametrize("text", [None, "{broken"])
def test_summary_names_a_report_it_cannot_read(tmp_path: Path, text: str | None,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "report.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    assert summary(argparse.Namespace(runs=[str(path)])) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"imagetime summary: cannot read {path}: ")


def test_merge_refuses_a_part_that_is_not_a_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a").mkdir()
    args = argparse.Namespace(parts=[str(tmp_path / "a"), str(tmp_path / "b")],
                              out=str(tmp_path / "out"), partial=False)
    assert merge(args) == 2
    assert capsys.readouterr().err == f"imagetime merge: not a directory: {tmp_path / 'b'}\n"


def test_merge_words_a_refused_merge(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    args = argparse.Namespace(parts=[str(tmp_path / "empty")], out=str(tmp_path / "out"),
                              partial=True)
    assert merge(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("imagetime merge: ")
    assert "no run directories with a report.json" in err
    assert not (tmp_path / "out").exists()


def test_report_without_runs_is_a_usage_error(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(runs=[str(tmp_path), str(tmp_path / "missing")],
                              out=str(tmp_path / "html"))
    assert report(args) == 2
    assert capsys.readouterr().err == \
        f"imagetime report: no report.json under {tmp_path}, {tmp_path / 'missing'}\n"
    assert not (tmp_path / "html").exists()
