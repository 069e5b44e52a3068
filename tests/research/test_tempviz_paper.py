"""The TempViz paper's evaluation: the combined label, point-biserial r with its t-test,
macro P / R / F1 per category, the random baseline and the VQA threshold sweep."""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import pytest
from scipy import stats as scipy_stats  # type: ignore[import-untyped]

from pytest_imagetime.cli import main
from pytest_imagetime.research.tempviz_paper.evaluate import (
    prf_by_category,
    random_predictions,
    sweep,
)
from pytest_imagetime.research.tempviz_paper.labels import combined
from pytest_imagetime.research.tempviz_paper.significance import (
    point_biserial_test,
    t_two_sided,
)


def write(path: Path, columns: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


@pytest.mark.parametrize("seed", range(5))
def test_point_biserial_test_matches_scipy(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(5, 400)
    binary = [rng.random() < 0.4 for _ in range(n)]
    values = [rng.gauss(0.3 * b, 1.0) for b in binary]
    ours = point_biserial_test(values, binary)
    theirs = scipy_stats.pointbiserialr(binary, values)
    assert ours.r == pytest.approx(theirs.statistic, abs=1e-12)
    assert ours.p == pytest.approx(theirs.pvalue, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(("t", "df"), [(0.0, 5), (0.35, 498), (2.14, 498), (-4.2, 10),
                                       (30.0, 3), (1.0, 1)])
def test_t_tail_matches_scipy(t: float, df: int) -> None:
    assert t_two_sided(t, df) == pytest.approx(2 * scipy_stats.t.sf(abs(t), df), rel=1e-10)


def test_undefined_correlation_is_nan_not_an_error() -> None:
    result = point_biserial_test([1.0, 1.0, 1.0], [True, False, True])
    assert math.isnan(result.r) and math.isnan(result.p) and not result.significant()


@pytest.mark.parametrize(("q2", "q3", "expected"), [
    ("yes", "yes", True), ("yes", "no", False), ("no", "yes", False), ("no", "", False),
    ("", "yes", None), ("1", "true", True)])
def test_combined_label_is_q2_and_q3(q2: str, q3: str, expected: bool | None) -> None:
    assert combined({"q2": q2, "q3": q3}) is expected


def test_overall_is_pooled_not_the_mean_of_categories() -> None:
    categories = ["A"] * 4 + ["B"] * 2
    truth = [True, True, False, False, True, False]
    predicted = [True, False, False, False, False, False]
    rows = prf_by_category(categories, truth, predicted)
    assert rows["A"].f1 == pytest.approx(100 * (2 / 3 + 0.8) / 2)
    assert rows["overall"].n == 6
    assert rows["overall"].f1 != pytest.approx((rows["A"].f1 + rows["B"].f1) / 2)


def test_random_baseline_is_seeded_and_follows_its_distribution() -> None:
    categories = ["A"] * 2000 + ["B"] * 2000
    truth = [i % 10 == 0 for i in range(2000)] + [True] * 2000
    first = random_predictions(categories, truth, "uniform", seed=3)
    assert first == random_predictions(categories, truth, "uniform", seed=3)
    assert first != random_predictions(categories, truth, "uniform", seed=4)
    assert sum(first) / 4000 == pytest.approx(0.5, abs=0.03)
    prior = random_predictions(categories, truth, "prior", seed=3)
    assert sum(prior[:2000]) / 2000 == pytest.approx(0.1, abs=0.03)
    assert all(prior[2000:])
    with pytest.raises(ValueError, match="uniform or prior"):
        random_predictions(categories, truth, "gauss")


def test_sweep_thresholds_the_share_of_correct_answers() -> None:
    table = sweep(["A"] * 4, [True, True, False, False], [1.0, 0.8, 0.5, 0.2], [0.0, 0.6])
    assert table[0.6]["A"].f1 == pytest.approx(100.0)
    assert table[0.0]["A"].f1 == pytest.approx(100 * (2 / 3) / 2)


@pytest.fixture
def human(tmp_path: Path) -> Path:
    rows = [["flux", "Maps", "0", "yes", "yes", "yes"],
            ["flux", "Maps", "1", "yes", "yes", "no"],
            ["flux", "Animals", "0", "no", "no", "yes"],
            ["flux", "Animals", "1", "yes", "yes", "yes"],
            ["sdxl", "Maps", "0", "yes", "yes", "no"]]
    return write(tmp_path / "human.csv", ["model", "category", "index", "q1", "q2", "q3"], rows)


def test_prf_paper_setting_scores_the_whole_prompt_answer_against_q2_and_q3(
        human: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The suite's answers.csv: q3 is the tables' whole-prompt question (annotation_prompt_2).
    answers = write(tmp_path / "answers.csv",
                    ["model", "judge", "id", "category", "index", "q1", "q2", "q3", "q2_and_q3"],
                    [["flux", "j", "Maps-0", "Maps", "0", "yes", "no", "yes", "no"],
                     ["flux", "j", "Maps-1", "Maps", "1", "yes", "yes", "no", "no"],
                     ["flux", "j", "Animals-0", "Animals", "0", "yes", "yes", "no", "no"],
                     ["flux", "j", "Animals-1", "Animals", "1", "yes", "yes", "yes", "yes"],
                     ["sdxl", "j", "Maps-0", "Maps", "0", "yes", "yes", "yes", "yes"]])
    assert main(["tempviz", "prf", str(human), str(answers), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    rows = result["comparisons"]["q2_and_q3 vs q3"]["rows"]
    # human combined: yes, no, no, yes, no; whole-prompt answers: yes, no, no, yes, yes
    assert rows["overall"]["n"] == 5
    assert rows["overall"]["macro_precision"] == pytest.approx(100 * (2 / 3 + 1) / 2)
    assert rows["Animals"]["macro_f1"] == pytest.approx(100.0)
    assert main(["tempviz", "prf", str(human), str(answers), "--setting", "per-question",
                 "--json"]) == 0
    per = json.loads(capsys.readouterr().out)["comparisons"]
    assert set(per) == {"q1 vs q1", "q2 vs q2", "q3 vs q3", "q2_and_q3 vs q2_and_q3"}
    # the judge's own q2 AND q3 is no for Maps-0 of flux: one more miss than the paper's
    assert per["q2_and_q3 vs q2_and_q3"]["rows"]["overall"]["macro_f1"] != pytest.approx(
        rows["overall"]["macro_f1"])


def test_prf_prefers_a_prediction_column(human: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    judged = write(tmp_path / "judge.csv", ["model", "id", "prediction"],
                   [["flux", "Maps-0", "yes"], ["flux", "Maps-1", "no"]])
    assert main(["tempviz", "prf", str(human), str(judged)]) == 0
    captured = capsys.readouterr()
    assert "human q2_and_q3 vs prediction" in captured.out
    assert "3 labelled items have no row" in captured.err


def test_random_command(human: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tempviz", "random", str(human), "--seed", "1", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(["tempviz", "random", str(human), "--seed", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert first["distribution"] == "uniform" and first["rows"]["overall"]["n"] == 5


def test_pbs_command_reads_baseline_tables(human: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    scores = write(tmp_path / "clip.csv", ["model", "case_id", "score", "cosine"],
                   [["flux", "Maps-0", "0.9", "0.36"], ["flux", "Maps-1", "0.2", "0.08"],
                    ["flux", "Animals-0", "0.1", "0.04"], ["flux", "Animals-1", "0.8", "0.32"],
                    ["sdxl", "Maps-0", "0.3", "0.12"]])
    assert main(["tempviz", "pbs", str(human), str(scores), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    combined_r = result["q2_and_q3"]["overall"]
    expected = scipy_stats.pointbiserialr([1, 0, 0, 1, 0], [0.9, 0.2, 0.1, 0.8, 0.3])
    assert combined_r["r"] == pytest.approx(expected.statistic)
    assert combined_r["p"] == pytest.approx(expected.pvalue)
    assert combined_r["significant"] is bool(expected.pvalue < 0.05)
    assert main(["tempviz", "pbs", str(human), str(scores), "--by-category"]) == 0
    out = capsys.readouterr().out
    assert "Animals" in out and "overall" in out


def test_bad_tables_exit_2(human: Path, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path / "bad.csv", ["model", "case_id", "score"], [["flux", "nodash", "1"]])
    assert main(["tempviz", "pbs", str(human), str(bad)]) == 2
    assert "<Category>-<index>" in capsys.readouterr().err
    assert main(["tempviz", "prf", str(human), str(tmp_path / "none.csv")]) == 2


def test_prf_refuses_answers_that_are_not_yes_or_no(human: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    judged = write(tmp_path / "judge.csv", ["model", "id", "prediction"],
                   [["flux", "Maps-0", "maybe"]])
    assert main(["tempviz", "prf", str(human), str(judged)]) == 2
    assert "holds 'maybe', not yes/no" in capsys.readouterr().err
