"""``imagetime probe-order`` and ``imagetime judges-agree``: option values checked by argparse,
cases loaded or refused, and judges-agree from a judge's or a model's directory.
(A whole order probe against a fake endpoint: tests/research/test_order_probe.py.)"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cli import runner
from pytest_imagetime.research.agreement.parsers import judges_agree_parser
from pytest_imagetime.research.cases import load_cases
from pytest_imagetime.research.probe.commands import DEFAULT_OUT
from pytest_imagetime.research.probe.commands import add_parser as probe_order_parser
from pytest_imagetime.rubric.facts import RUBRIC_VERSION
from pytest_imagetime.rubric.judgment import Judgment
from tests.builders import case_dict, write_case_file


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="imagetime")
    sub = parser.add_subparsers(dest="command")
    probe_order_parser(sub)
    judges_agree_parser(sub)
    return parser.parse_args(list(argv))


def test_probe_order_defaults() -> None:
    args = _parse("probe-order", "reports")
    assert (args.out, args.seed, args.sample, args.cover_corner, args.key_env) == (
        DEFAULT_OUT, 0, None, 0.0, "OPENAI_API_KEY")


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--concurrency", "0", "'0': give an integer of 1 or more"),
    ("--sample", "x", "'x': give an integer of 1 or more"),
    ("--retries", "-1", "'-1': give a non-negative integer"),
    ("--seed", "1.5", "'1.5': give a non-negative integer"),
    ("--timeout", "0", "'0': give seconds, a number above 0"),
    ("--timeout", "nan", "'nan': give seconds, a number above 0"),
    ("--cover-corner", "0.6", "'0.6': give a fraction from 0 to 0.5"),
    ("--cover-corner", "half", "'half': give a fraction from 0 to 0.5"),
])
def test_bad_values_name_what_to_give(option: str, value: str, message: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parse("probe-order", "reports", option, value)
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("corner", "timeout"), [("0", "0.5"), ("0.5", "1"), ("0.25", "30")])
def test_good_values_are_converted(corner: str, timeout: str) -> None:
    args = _parse("probe-order", "r", "--cover-corner", corner, "--timeout", timeout,
                  "--retries", "0")
    assert (args.cover_corner, args.timeout, args.retries) == (float(corner), float(timeout), 0)


def test_cases_load_from_files_or_are_refused(tmp_path: Path) -> None:
    path = write_case_file(tmp_path / "k.yaml", [case_dict()])
    assert list(load_cases([str(path)])) == ["kitchen-pour-water-1"]
    with pytest.raises(FileNotFoundError, match=r"no such file or directory: .*nope"):
        load_cases([str(tmp_path / "nope")])


def test_probe_order_without_sheets_exits_2(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = write_case_file(tmp_path / "k.yaml", [case_dict()])
    args = _parse("probe-order", str(tmp_path / "empty"), "--cases", str(path))
    assert runner(args)(args) == 2
    assert capsys.readouterr().err.strip() == (
        f"imagetime probe-order: no stored sheets (an images/ folder) under {tmp_path / 'empty'}")


def _judged(run_dir: Path, case_id: str, c0: int) -> None:
    folder = run_dir / "judgments"
    folder.mkdir(parents=True, exist_ok=True)
    judgment = Judgment("vlm", "m", RUBRIC_VERSION, "p", {"C0": c0})
    (folder / f"{case_id}.json").write_text(json.dumps(
        {"case_id": case_id, "image_sha256": "s", "judgment": judgment.to_json()}))


def test_judges_agree_from_the_model_or_a_judges_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = write_case_file(tmp_path / "k.yaml", [case_dict()])
    model = tmp_path / "out" / "procedural"
    _judged(model / "vlm", "kitchen-pour-water-1", 7)
    _judged(model / "vlm-chain", "kitchen-pour-water-1", 5)
    for run in (model, model / "vlm"):
        args = _parse("judges-agree", str(run), "--cases", str(cases), "--json")
        assert runner(args)(args) == 0
        result: dict[str, Any] = json.loads(capsys.readouterr().out)
        assert result["run"] == str(model)
        assert result["overall"]["dims"]["C0"]["mae"] == 2.0


def test_judges_agree_without_common_sheets_exits_2(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cases = write_case_file(tmp_path / "k.yaml", [case_dict()])
    _judged(tmp_path / "m" / "vlm", "kitchen-pour-water-1", 7)
    args = _parse("judges-agree", str(tmp_path / "m"), "--b", "pixel", "--cases", str(cases))
    assert runner(args)(args) == 2
    assert capsys.readouterr().err.strip() == (
        f"imagetime judges-agree: no sheet of {tmp_path / 'm'} was judged by both vlm and "
        f"pixel (looked in {tmp_path / 'm'}/<judge>/judgments)")
    bad = _parse("judges-agree", str(tmp_path / "m"), "--cases", str(tmp_path / "nope"))
    assert runner(bad)(bad) == 2
    assert "no such file or directory" in capsys.readouterr().err
