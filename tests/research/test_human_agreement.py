"""Human correlation as UI2V-Bench computes it: per-rater normalisation, the mean over raters,
Kendall's tau and Spearman's rho, per dimension and their unweighted mean."""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import pytest
import scipy.stats  # type: ignore[import-untyped]

from pytest_imagetime.cli import main
from pytest_imagetime.research.agreement.human import (
    Rating,
    average,
    correlate,
    human_scores,
    kendall_tau_a,
    normalise,
    read_ratings,
)

# UI2V-Bench Table 3 (FACTS.md section 3.7): tau and rho per dimension, then "Avg.".
TABLE_3 = {"Spatial Understanding": (0.6052, 0.7345), "Attribute Binding": (0.2980, 0.3566),
           "Category Understanding": (0.5729, 0.6683), "Reasoning": (0.6121, 0.7329)}
TABLE_3_AVG = (0.5220, 0.6231)


def test_the_papers_avg_is_the_unweighted_mean_over_the_four_dimensions() -> None:
    tau = average(t for t, _ in TABLE_3.values())
    rho = average(r for _, r in TABLE_3.values())
    # within the four printed decimals (the tau mean is 0.52205 exactly, printed 0.5220)
    assert abs(tau - TABLE_3_AVG[0]) <= 0.00005 + 1e-12
    assert abs(rho - TABLE_3_AVG[1]) <= 0.00005 + 1e-12


def test_z_and_minmax_normalisation() -> None:
    z = normalise([1, 2, 3, 4, 5])
    assert z is not None
    assert sum(z) == pytest.approx(0)
    assert sum(v * v for v in z) / 5 == pytest.approx(1)
    assert normalise([2, 4, 3], "minmax") == [0.0, 1.0, 0.5]
    assert normalise([3, 3, 3]) is None  # nothing to rank


def test_tau_a_against_scipy_and_tau_b_differs_only_with_ties() -> None:
    x = [1, 2, 2, 3, 5, 4]
    y = [2, 1, 3, 3, 4, 6]
    assert kendall_tau_a(x, y) == pytest.approx(_tau_a_by_hand(x, y))
    assert kendall_tau_a(x, y) < scipy.stats.kendalltau(x, y).statistic  # tau-b corrects ties
    no_ties = [1, 2, 3, 4, 5, 6]
    assert kendall_tau_a(no_ties, [2, 1, 4, 3, 6, 5]) == pytest.approx(
        scipy.stats.kendalltau(no_ties, [2, 1, 4, 3, 6, 5]).statistic)
    assert math.isnan(kendall_tau_a([1], [1]))


def _tau_a_by_hand(x: list[int], y: list[int]) -> float:
    n = len(x)
    p = q = 0
    for i in range(n):
        for j in range(i + 1, n):
            s = (x[i] - x[j]) * (y[i] - y[j])
            p += s > 0
            q += s < 0
    return (p - q) / (n * (n - 1) / 2)


def _panel(raters: int = 8, items: int = 12, seed: int = 0) -> list[Rating]:
    """Raters with their own offsets and spreads on a 1-5 scale around a true quality."""
    rng = random.Random(seed)
    truth = {f"v{i}": i / (items - 1) for i in range(items)}
    out = []
    for r in range(raters):
        offset, spread = rng.choice([0, 1]), rng.choice([2, 4])
        for item, q in truth.items():
            out.append(Rating(f"r{r}", item, max(1, min(5, round(1 + offset + spread * q
                                                               + rng.gauss(0, 0.3))))))
    return out


def test_human_score_is_the_mean_of_normalised_scores() -> None:
    ratings = _panel()
    means, few, constant = human_scores(ratings)
    assert not few and not constant
    expected: dict[str, list[float]] = {}
    for rater in {r.rater for r in ratings}:
        rows = [r for r in ratings if r.rater == rater]
        normed = normalise([r.score for r in rows])
        assert normed is not None
        for row, value in zip(rows, normed, strict=True):
            expected.setdefault(row.item, []).append(value)
    assert means == pytest.approx({i: sum(v) / len(v) for i, v in expected.items()})


def test_correlate_against_scipy_and_leaves_out_items_with_few_raters() -> None:
    ratings = _panel()
    # one item rated by only 3 raters: left out, and said so
    ratings = [r for r in ratings if not (r.item == "v0" and r.rater not in {"r0", "r1", "r2"})]
    metric = {("all", f"v{i}"): float(i * 7 % 11) for i in range(12)}
    [found] = correlate(ratings, metric)
    assert found.few_raters == ("v0",)
    means, _, _ = human_scores(ratings)
    items = sorted(means)
    x = [metric[("all", i)] for i in items]
    y = [means[i] for i in items]
    assert found.n == 11
    assert found.tau == pytest.approx(scipy.stats.kendalltau(x, y).statistic)
    assert found.rho == pytest.approx(scipy.stats.spearmanr(x, y).statistic)


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_human_agree_command_per_dimension_and_average(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    rows: list[dict[str, object]] = []
    metric_rows: list[dict[str, object]] = []
    for d, dim in enumerate(("Spatial Understanding", "Reasoning")):
        for r in _panel(seed=d):
            rows.append({"rater": r.rater, "item": r.item, "score": r.score, "dimension": dim})
        for i in range(12):  # the metric follows the truth in one dimension, not the other
            metric_rows.append({"item": f"v{i}", "dimension": dim,
                                "score": i if d == 0 else (i * 5) % 12})
    ratings = _write(tmp_path / "ratings.csv", rows)
    assert read_ratings(ratings)[0].dimension == "Spatial Understanding"
    metric = _write(tmp_path / "metric.csv", metric_rows)
    assert main(["human-agree", str(ratings), str(metric), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["normalise"] == "z" and out["tau_variant"] == "b" and out["min_raters"] == 8
    spatial, reasoning = out["dimensions"]
    assert spatial["tau"] > 0.8 and abs(reasoning["tau"]) < 0.5
    assert out["average"]["tau"] == pytest.approx((spatial["tau"] + reasoning["tau"]) / 2)
    assert out["average"]["rho"] == pytest.approx((spatial["rho"] + reasoning["rho"]) / 2)
    assert main(["human-agree", str(ratings), str(metric), "--normalise", "minmax",
                 "--tau", "a"]) == 0
    text = capsys.readouterr().out
    assert "tau-a" in text and "Avg." in text
    # nine raters asked for, eight given: nothing to correlate
    assert main(["human-agree", str(ratings), str(metric), "--min-raters", "9"]) == 2
    assert "9 raters" in capsys.readouterr().err
