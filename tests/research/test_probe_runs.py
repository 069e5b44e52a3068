"""``research/probe/runs.py``: the ``probe-order`` runner's refusals before it asks anything,
and the options its endpoint messages point to."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pytest_imagetime.research.probe.commands import add_parser
from pytest_imagetime.research.probe.runs import (
    KEY_HINT,
    PROBE_HINTS,
    RATER_HINTS,
    RATER_KEY_HINT,
    probe_order,
)
from tests.builders import case_dict, write_case_file


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="imagetime")
    add_parser(parser.add_subparsers(dest="command"))
    return parser


def _args(*words: str) -> argparse.Namespace:
    return _parser().parse_args(["probe-order", *words])


def test_a_missing_case_file_is_worded(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    args = _args(str(tmp_path), "--cases", str(tmp_path / "nowhere.yaml"),
                 "--out", str(tmp_path / "probe.json"))
    assert probe_order(args) == 2
    assert capsys.readouterr().err.startswith("imagetime probe-order: ")
    assert not (tmp_path / "probe.json").exists()


def test_runs_without_stored_sheets_are_named(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    write_case_file(tmp_path / "kitchen.yaml", [case_dict()])
    (tmp_path / "reports").mkdir()
    args = _args(str(tmp_path / "reports"), str(tmp_path / "more"), "--cases", str(tmp_path),
                 "--out", str(tmp_path / "probe.json"))
    assert probe_order(args) == 2
    assert capsys.readouterr().err == (
        "imagetime probe-order: no stored sheets (an images/ folder) under "
        f"{tmp_path / 'reports'}, {tmp_path / 'more'}\n")
    assert not (tmp_path / "probe.json").exists()


@pytest.mark.parametrize("hints", [PROBE_HINTS, RATER_HINTS])
def test_the_hints_name_options_of_the_parser(hints: dict[str, str]) -> None:
    assert set(hints) == set(PROBE_HINTS)
    for key, flag in hints.items():
        if key != "params_option":
            _args("runs", flag, "1")  # a flag the parser refuses exits here


def test_the_key_hints_name_their_own_option() -> None:
    assert KEY_HINT.startswith("--key-env NAME")
    assert RATER_KEY_HINT.startswith("--rater-key-env NAME")
    assert all("'none'" in hint for hint in (KEY_HINT, RATER_KEY_HINT))
