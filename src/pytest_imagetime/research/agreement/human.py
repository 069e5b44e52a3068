"""``imagetime human-agree``: a metric against human ratings, as UI2V-Bench correlates them.

Each rater's scores are normalised within a dimension (z-score by default, or min-max), an
item's human score is the mean of its raters' normalised scores, and Kendall's tau (b by
default, or a) and Spearman's rho are computed between that and the metric, per dimension;
``Avg.`` is the unweighted mean over dimensions (docs/ui2v.md).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import stats
from .parsers import MIN_RATERS, NORMALISATIONS, TAUS

ALL = "all"  # the dimension of rows that name none
AVERAGE = "Avg."


class RatingsError(ValueError):
    """A ratings or metric file that cannot be read as described."""


@dataclass(frozen=True)
class Rating:
    rater: str
    item: str
    score: float
    dimension: str = ALL


def _rows(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return list(csv.DictReader(text.splitlines()))


def _number(row: Mapping[str, Any], column: str, path: Path, line: int) -> float:
    try:
        value = float(row[column])
    except (KeyError, TypeError, ValueError):
        raise RatingsError(f"{path}: row {line} has no number in column {column!r}") from None
    if not math.isfinite(value):
        raise RatingsError(f"{path}: row {line} column {column!r} is {value}")
    return value


def read_ratings(path: Path) -> list[Rating]:
    """Rows ``rater,item,score[,dimension]`` (CSV with a header, or JSONL)."""
    out = []
    for line, row in enumerate(_rows(path), start=1):
        if not row.get("rater") or not row.get("item"):
            raise RatingsError(f"{path}: row {line} needs a rater and an item")
        out.append(Rating(str(row["rater"]), str(row["item"]),
                          _number(row, "score", path, line), str(row.get("dimension") or ALL)))
    return out


def read_metric(path: Path) -> dict[tuple[str, str], float]:
    """Rows ``item,score[,dimension]``: (dimension, item) -> the metric's score."""
    out: dict[tuple[str, str], float] = {}
    for line, row in enumerate(_rows(path), start=1):
        if not row.get("item"):
            raise RatingsError(f"{path}: row {line} needs an item")
        key = (str(row.get("dimension") or ALL), str(row["item"]))
        if key in out:
            raise RatingsError(f"{path}: item {key[1]!r} ({key[0]}) appears twice")
        out[key] = _number(row, "score", path, line)
    return out


def normalise(scores: Sequence[float], method: str = "z") -> list[float] | None:
    """One rater's scores normalised; None for a rater who gave one value throughout (no
    ranking to normalise). z: (s - mean) / population std; minmax: (s - min) / (max - min)."""
    if method not in NORMALISATIONS:
        raise ValueError(f"normalisation must be one of {', '.join(NORMALISATIONS)}")
    lo, hi = min(scores), max(scores)
    if hi == lo:
        return None
    if method == "minmax":
        return [(s - lo) / (hi - lo) for s in scores]
    mean = sum(scores) / len(scores)
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / len(scores))
    return [(s - mean) / std for s in scores]


def kendall_tau_a(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-a: (P - Q) / (n (n - 1) / 2), ties counted in neither P nor Q."""
    n = len(x)
    if n != len(y):
        raise ValueError(f"paired sequences differ in length: {n} and {len(y)}")
    if n < 2:
        return stats.NAN
    net = sum((1 if (x[i] - x[j]) * (y[i] - y[j]) > 0 else -1)
              for i in range(n) for j in range(i + 1, n)
              if (x[i] - x[j]) * (y[i] - y[j]) != 0)
    return net / (n * (n - 1) / 2)


@dataclass(frozen=True)
class Correlation:
    dimension: str
    n: int  # items with enough raters and a metric score
    tau: float
    rho: float
    few_raters: tuple[str, ...]  # items left out: fewer raters than asked
    constant_raters: tuple[str, ...]  # raters left out: one value throughout the dimension
    no_metric: tuple[str, ...]  # rated items the metric has no score for

    def to_json(self) -> dict[str, Any]:
        return {"dimension": self.dimension, "n": self.n, "tau": _finite(self.tau),
                "rho": _finite(self.rho), "few_raters": list(self.few_raters),
                "constant_raters": list(self.constant_raters),
                "no_metric": list(self.no_metric)}


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


def human_scores(ratings: Iterable[Rating], method: str = "z", min_raters: int = MIN_RATERS
                 ) -> tuple[dict[str, float], tuple[str, ...], tuple[str, ...]]:
    """One dimension's ratings -> (item -> mean normalised score, items with too few raters,
    raters left out for giving one value throughout)."""
    by_rater: dict[str, list[Rating]] = defaultdict(list)
    for r in ratings:
        by_rater[r.rater].append(r)
    per_item: dict[str, list[float]] = defaultdict(list)
    constant = []
    for rater, rows in sorted(by_rater.items()):
        normalised = normalise([r.score for r in rows], method)
        if normalised is None:
            constant.append(rater)
            continue
        for row, value in zip(rows, normalised, strict=True):
            per_item[row.item].append(value)
    few = tuple(sorted(i for i, v in per_item.items() if len(v) < min_raters))
    means = {i: sum(v) / len(v) for i, v in per_item.items() if len(v) >= min_raters}
    return means, few, tuple(constant)


def correlate(ratings: Sequence[Rating], metric: Mapping[tuple[str, str], float], *,
              method: str = "z", tau: str = "b", min_raters: int = MIN_RATERS
              ) -> list[Correlation]:
    """Per dimension (in the ratings' order): tau and rho of the metric against the human
    score."""
    if tau not in TAUS:
        raise ValueError(f"tau must be one of {', '.join(TAUS)}")
    dims = list(dict.fromkeys(r.dimension for r in ratings))
    out = []
    for dim in dims:
        human, few, constant = human_scores([r for r in ratings if r.dimension == dim],
                                            method, min_raters)
        items = sorted(i for i in human if (dim, i) in metric)
        x = [metric[(dim, i)] for i in items]
        y = [human[i] for i in items]
        t = stats.kendall_tau(x, y) if tau == "b" else kendall_tau_a(x, y)
        out.append(Correlation(dim, len(items), t, stats.spearman(x, y), few, constant,
                               tuple(sorted(i for i in human if (dim, i) not in metric))))
    return out


def average(values: Iterable[float]) -> float:
    """The unweighted mean over dimensions (the paper's ``Avg.``); nan if any is undefined."""
    found = list(values)
    return sum(found) / len(found) if found else stats.NAN


def run(args: argparse.Namespace) -> int:
    try:
        ratings = read_ratings(Path(args.ratings))
        metric = read_metric(Path(args.metric))
    except RatingsError as exc:
        print(f"imagetime human-agree: {exc}", file=sys.stderr)
        return 2
    found = correlate(ratings, metric, method=args.normalise, tau=args.tau,
                      min_raters=args.min_raters)
    usable = [c for c in found if c.n]
    if not usable:
        print("imagetime human-agree: no item has both a metric score and "
              f"{args.min_raters} raters", file=sys.stderr)
        return 2
    avg_tau = average(c.tau for c in found)
    avg_rho = average(c.rho for c in found)
    if args.json:
        print(json.dumps({"normalise": args.normalise, "tau_variant": args.tau,
                          "min_raters": args.min_raters,
                          "dimensions": [c.to_json() for c in found],
                          "average": {"tau": _finite(avg_tau), "rho": _finite(avg_rho)}},
                         indent=2))
        return 0
    print(f"{'dimension':<28} {'n':>5} {'tau-' + args.tau:>8} {'rho':>8}")
    for c in [*found, Correlation(AVERAGE, sum(c.n for c in found), avg_tau, avg_rho,
                                  (), (), ())]:
        print(f"{c.dimension:<28} {c.n:>5} {_shown(c.tau):>8} {_shown(c.rho):>8}")
    for c in found:
        for what, names in (("fewer raters than asked", c.few_raters),
                            ("raters with one value throughout", c.constant_raters),
                            ("no metric score", c.no_metric)):
            if names:
                print(f"{c.dimension}: left out, {what}: {', '.join(names)}")
    return 0


def _shown(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.4f}"
