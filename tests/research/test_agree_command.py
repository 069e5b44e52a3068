"""``imagetime agree``: the statistics that fit the labels, groups, unmatched rows, refusals."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.research.agreement.command import COLUMNS, run
from pytest_imagetime.research.agreement.parsers import agree_parser


def _table(path: Path, rows: list[str], head: str = "model,case_id,domain,label") -> str:
    path.write_text("\n".join([head, *rows]) + "\n")
    return str(path)


def _agree(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="imagetime")
    agree_parser(parser.add_subparsers(dest="command"))
    code: int = run(parser.parse_args(["agree", *argv]))
    return code


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert _agree(*argv, "--json") == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


def test_identical_yes_no_labels_agree_fully(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    rows = ["m,a,K,yes", "m,b,K,no", "m,c,S,yes", "m,d,S,no"]
    a, b = _table(tmp_path / "a.csv", rows), _table(tmp_path / "b.csv", rows)
    result = _json(capsys, a, b, "--on", "model,case_id", "--label", "label", "--by", "domain")
    assert result["type"] == "categorical"
    assert result["overall"] == pytest.approx({"n": 4, "missing": 0, "kappa": 1.0,
                                               "accuracy": 100.0, "macro_precision": 100.0,
                                               "macro_recall": 100.0, "macro_f1": 100.0})
    assert set(result["groups"]) == {"K", "S"}
    assert result["unmatched_a"] == {"count": 0, "first": []}


def test_scores_are_compared_as_ordinal_with_their_columns(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = _table(tmp_path / "a.csv", ["m,a,K,1", "m,b,K,4", "m,c,K,8", "m,d,K,10"])
    b = _table(tmp_path / "b.csv", ["m,a,K,2", "m,b,K,5", "m,c,K,7", "m,d,K,10"])
    result = _json(capsys, a, b, "--on", "model,case_id", "--label", "label")
    assert result["type"] == "ordinal"
    overall = result["overall"]
    assert set(COLUMNS["ordinal"]) <= set(overall)
    assert overall["spearman"] == pytest.approx(1.0)
    assert overall["mae"] == pytest.approx(0.75)


def test_a_score_against_yes_no_is_point_biserial(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    a = _table(tmp_path / "a.csv", ["m,a,K,yes", "m,b,K,no", "m,c,K,yes", "m,d,K,no"])
    b = _table(tmp_path / "b.csv", ["m,a,K,0.9", "m,b,K,0.1", "m,c,K,0.8", "m,d,K,0.3"],
               head="model,case_id,domain,score")
    assert _agree(a, b, "--on", "case_id", "--label", "label", "--label-b", "score") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"A: {a} (label)   B: {b} (score)   on case_id"
    assert out[1] == "labels: continuous (B) vs binary (A): point-biserial r"
    assert out[2] == "pairs: 4 matched, 0 with a missing label left out"
    assert out[4].split() == ["n", "missing", "point_biserial"]
    assert out[5].split()[:3] == ["overall", "4", "0"] and float(out[5].split()[3]) > 0.9
    assert out[-1] == "coefficients in -1..1"


def test_rows_without_a_match_are_named_on_stderr(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    a = _table(tmp_path / "a.csv", ["m,a,K,yes", "m,b,K,no", "m,x,K,yes", "m,c,K,"])
    b = _table(tmp_path / "b.csv", ["m,a,K,yes", "m,b,K,yes", "m,c,K,no"])
    assert _agree(a, b, "--on", "model,case_id", "--label", "label") == 0
    captured = capsys.readouterr()
    assert captured.err.strip().startswith(f"imagetime agree: 1 row of {a} without a match in "
                                           "the other table: ")
    assert "x" in captured.err
    assert "pairs: 2 matched, 1 with a missing label left out" in captured.out
    assert "accuracy, precision, recall and F1 in %, A as the reference" in captured.out


@pytest.mark.parametrize(("argv", "message"), [
    (("--on", " , ", "--label", "label"), "imagetime agree: --on needs at least one key column"),
    (("--on", "case_id", "--label", "nope"), "imagetime agree: "),
])
def test_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              argv: tuple[str, ...], message: str) -> None:
    a = _table(tmp_path / "a.csv", ["m,a,K,yes"])
    assert _agree(a, a, *argv) == 2
    assert capsys.readouterr().err.startswith(message)


def test_tables_without_a_common_row_exit_2(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    a = _table(tmp_path / "a.csv", ["m,a,K,yes"])
    b = _table(tmp_path / "b.csv", ["m,b,K,yes"])
    assert _agree(a, b, "--on", "case_id", "--label", "label") == 2
    assert capsys.readouterr().err.strip() == (f"imagetime agree: no row of {a} matches a row "
                                               f"of {b} on case_id")
