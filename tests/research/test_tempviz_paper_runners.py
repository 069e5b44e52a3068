"""``research/tempviz_paper/runs.py``: the ``imagetime tempviz`` runners called with their
parsed arguments: results, endpoint options, written tables and worded refusals."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.research.tempviz_paper.command import add_parser
from pytest_imagetime.research.tempviz_paper.runs import (
    judge,
    judge_options,
    label_export,
    prf,
    random_baseline,
    threshold_sweep,
    vqa_questions,
    write_rows,
)
from tests.tempviz_data import write_tables

HEADER = ["model", "category", "index", "q1", "q2", "q3"]


def _args(*words: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="imagetime")
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["tempviz", *words])


def _table(path: Path, columns: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


@pytest.fixture
def human(tmp_path: Path) -> Path:
    return _table(tmp_path / "human.csv", HEADER,
                  [["flux", "Maps", "0", "yes", "yes", "yes"],
                   ["flux", "Maps", "1", "yes", "yes", "no"],
                   ["flux", "Animals", "0", "no", "no", "yes"],
                   ["flux", "Animals", "1", "yes", "yes", "yes"]])


def test_judge_options_read_the_endpoint_arguments() -> None:
    args = _args("judge", "run", "--data", "d", "-o", "t.csv", "--key-env", "MY_KEY",
                 "--base-url", "http://localhost:1/v1", "--concurrency", "3",
                 "--timeout", "9", "--retries", "1", "--reasks", "0")
    options = judge_options(args, "some-vlm")
    assert (options.model, options.base_url, options.key_env) == (
        "some-vlm", "http://localhost:1/v1", "MY_KEY")
    assert (options.concurrency, options.timeout_s, options.retries, options.reasks) == (
        3, 9.0, 1, 0)


@pytest.mark.parametrize("none", ["none", "NONE", "None"])
def test_a_key_env_of_none_is_a_server_without_keys(none: str) -> None:
    args = _args("judge", "run", "--data", "d", "-o", "t.csv", "--key-env", none)
    assert judge_options(args, "m").key_env is None


def test_write_rows_writes_the_columns_in_order(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    write_rows(str(path), ["id", "answer"], [{"id": "Maps-0", "answer": "yes"},
                                             {"id": "Maps-1", "answer": "no"}])
    with path.open(newline="", encoding="utf-8") as fh:
        assert list(csv.reader(fh)) == [["id", "answer"], ["Maps-0", "yes"], ["Maps-1", "no"]]


def test_prf_scores_a_prediction_column(human: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    method = _table(tmp_path / "judge.csv", ["model", "id", "prediction"],
                    [["flux", "Maps-0", "yes"], ["flux", "Maps-1", "no"],
                     ["flux", "Animals-0", "no"], ["flux", "Animals-1", "yes"]])
    assert prf(_args("prf", str(human), str(method), "--json")) == 0
    rows = json.loads(capsys.readouterr().out)["comparisons"]["q2_and_q3 vs prediction"]["rows"]
    assert rows["overall"]["n"] == 4
    assert rows["overall"]["macro_f1"] == pytest.approx(100.0)


def test_prf_refuses_an_answer_that_is_not_yes_or_no(human: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    method = _table(tmp_path / "judge.csv", ["model", "id", "prediction"],
                    [["flux", "Maps-0", "maybe"]])
    assert prf(_args("prf", str(human), str(method))) == 2
    assert capsys.readouterr().err == (f"imagetime tempviz prf: {method}: column 'prediction' "
                                       "holds 'maybe', not yes/no\n")


def test_prf_names_a_missing_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "human.csv"
    assert prf(_args("prf", str(missing), str(missing))) == 2
    assert capsys.readouterr().err.startswith("imagetime tempviz prf: ")


def test_random_baseline_is_seeded(human: Path, capsys: pytest.CaptureFixture[str]) -> None:
    words = ("random", str(human), "--seed", "3", "--distribution", "prior", "--json")
    assert random_baseline(_args(*words)) == 0
    first = json.loads(capsys.readouterr().out)
    assert random_baseline(_args(*words)) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert (first["distribution"], first["seed"], first["missing"]) == ("prior", 3, 0)
    assert first["rows"]["overall"]["n"] == 4


def test_random_baseline_counts_unlabelled_rows_as_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    human = _table(tmp_path / "human.csv", HEADER,
                   [["flux", "Maps", "0", "yes", "yes", "yes"],
                    ["flux", "Maps", "1", "yes", "", ""]])
    assert random_baseline(_args("random", str(human), "--json")) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert result["missing"] == 1 and result["rows"]["overall"]["n"] == 1


def test_threshold_sweep_refuses_a_missing_column(human: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    method = _table(tmp_path / "vqa.csv", ["model", "id", "score"], [["flux", "Maps-0", "1"]])
    assert threshold_sweep(_args("sweep", str(human), str(method))) == 2
    err = capsys.readouterr().err
    assert err.startswith("imagetime tempviz sweep: ")
    assert "fraction" in err


def test_label_export_refuses_an_empty_sample(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    args = _args("label-export", str(tmp_path), "--data", str(tmp_path), "-o",
                 str(tmp_path / "form"), "--sample", "0")
    assert label_export(args) == 2
    assert capsys.readouterr().err == \
        "imagetime tempviz label-export: --sample must be at least 1\n"
    assert not (tmp_path / "form").exists()


@pytest.mark.parametrize("runner", [judge, vqa_questions])
def test_a_data_folder_without_tables_is_worded(runner: Any, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    name = "judge" if runner is judge else "vqa-questions"
    words = [name, str(tmp_path), "--data", str(tmp_path / "none"), "-o",
             str(tmp_path / "out.csv")]
    assert runner(_args(*words)) == 2
    assert capsys.readouterr().err.startswith(f"imagetime tempviz {name}: ")
    assert not (tmp_path / "out.csv").exists()


def test_judge_refuses_shots_without_exemplars(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    data = write_tables(tmp_path / "data")
    args = _args("judge", str(tmp_path), "--data", str(data), "--shots", "2", "-o",
                 str(tmp_path / "out.csv"))
    assert judge(args) == 2
    assert capsys.readouterr().err == "imagetime tempviz judge: --shots 2 needs --exemplars\n"
    assert not (tmp_path / "out.csv").exists()
