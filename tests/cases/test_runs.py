"""``cases/runs.py``: the ``imagetime lint`` runner's exit codes and messages."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pytest_imagetime.cases.runs import lint
from tests.builders import case_dict, write_case_file


def _args(*paths: Path, custom: bool = False, strict: bool = False) -> argparse.Namespace:
    return argparse.Namespace(paths=[str(p) for p in paths], custom=custom, complete=False,
                              strict=strict)


def test_without_paths_the_packaged_cases_are_linted(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert lint(_args()) == 0
    assert ": 0 errors, " in capsys.readouterr().out


def test_a_missing_path_is_a_usage_error(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere.yaml"
    assert lint(_args(missing)) == 2
    assert capsys.readouterr().err == \
        f"imagetime lint: no such file or directory: {missing}\n"


def test_a_folder_without_case_files_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.yaml").write_text("just: notes\n", encoding="utf-8")
    assert lint(_args(tmp_path)) == 2
    assert capsys.readouterr().err.startswith(f"imagetime lint: no case files under {tmp_path}")


def test_a_team_case_file_is_counted(tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = write_case_file(tmp_path / "kitchen.yaml", [case_dict()])
    assert lint(_args(path, custom=True)) == 0
    assert "1 cases in 1 files (1 domains): 0 errors" in capsys.readouterr().out


def test_outside_custom_mode_the_inventory_rule_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_case_file(tmp_path / "kitchen.yaml", [case_dict()])
    assert lint(_args(path)) == 1
    assert "has no variant 2" in capsys.readouterr().out


def test_a_broken_case_fails_with_its_problem(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = write_case_file(tmp_path / "kitchen.yaml", [case_dict(), case_dict()])
    assert lint(_args(path)) == 1
    out = capsys.readouterr().out
    assert "kitchen-pour-water-1" in out
    assert " 0 errors" not in out
