"""``imagetime label export|import|judge``: arguments, refusals with exit 2, what is written."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pytest_imagetime.cli import runner
from pytest_imagetime.research.labels.command import add_parser
from pytest_imagetime.research.labels.runners import SHOWN_PROBLEMS
from tests.builders import case_dict, write_case_file


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="imagetime")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["label", *argv])
    code: int = runner(args)(args)
    return code


@pytest.fixture
def cases(tmp_path: Path) -> Path:
    return write_case_file(tmp_path / "cases.yaml", [case_dict()])


HEAD = "item,model,case_id,domain,annotator,valid_sheet,p1,C0,notes"


def test_export_needs_a_positive_sample(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("export", str(tmp_path), "--sample", "0", "-o", str(tmp_path / "f")) == 2
    assert capsys.readouterr().err.strip() == ("imagetime label export: --sample must be at "
                                               "least 1")


def test_export_of_runs_that_are_not_there_exits_2(tmp_path: Path, cases: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("export", str(tmp_path / "nope"), "--sample", "3", "-o", str(tmp_path / "f"),
                "--cases", str(cases)) == 2
    assert capsys.readouterr().err.startswith("imagetime label export: ")
    assert not (tmp_path / "f").exists()


def test_import_writes_wide_or_long(tmp_path: Path, cases: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    answers = tmp_path / "answers.csv"
    answers.write_text(f"{HEAD}\n1,m,kitchen-pour-water-1,,ann,yes,no,6,\n"
                       "2,m,kitchen-pour-water-1,,bob,,,,\n")
    wide, long = tmp_path / "wide.csv", tmp_path / "long.csv"
    assert _run("import", str(answers), "-o", str(wide), "--cases", str(cases)) == 0
    assert capsys.readouterr().out.strip() == (f"wrote {wide}: 1 items from ann; skipped 1 "
                                               "unanswered")
    assert wide.read_text().splitlines()[1].startswith("1,m,kitchen-pour-water-1,Kitchen,ann,yes,")
    assert _run("import", str(answers), "-o", str(long), "--format", "long",
                "--cases", str(cases)) == 0
    lines = long.read_text().splitlines()
    assert lines[0] == "model,case_id,domain,annotator,predicate,satisfied"
    assert "m,kitchen-pour-water-1,Kitchen,ann,p1,no" in lines


def test_import_lists_at_most_its_share_of_problems(tmp_path: Path, cases: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    answers = tmp_path / "answers.csv"
    rows = [f"{n},m,unknown-{n},,ann,yes,,," for n in range(SHOWN_PROBLEMS + 3)]
    answers.write_text("\n".join([HEAD, *rows]) + "\n")
    assert _run("import", str(answers), "-o", str(tmp_path / "t.csv"), "--cases",
                str(cases)) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == SHOWN_PROBLEMS + 1
    assert err[-1] == "imagetime label import: ... and 3 more problems"
    assert not (tmp_path / "t.csv").exists()


def test_import_without_answers_exits_2(tmp_path: Path, cases: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    answers = tmp_path / "answers.csv"
    answers.write_text(f"{HEAD}\n1,m,kitchen-pour-water-1,,ann,,,,\n")
    assert _run("import", str(answers), "-o", str(tmp_path / "t.csv"), "--cases",
                str(cases)) == 2
    assert capsys.readouterr().err.strip() == "imagetime label import: no answers in these files"


def test_judge_of_runs_that_are_not_there_exits_2(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("judge", str(tmp_path / "nope"), "-o", str(tmp_path / "t.csv")) == 2
    assert capsys.readouterr().err.strip() == (f"imagetime label judge: {tmp_path / 'nope'}: "
                                               "no such file or directory")
