"""The paper's numbers from matched labels: macro P / R / F1 per category and pooled over
every item (Tables 4, 12 and 13), the random baseline, and the threshold sweep of
decompositional VQA (Figure 4).

"overall" is computed over all items pooled, not as the mean of the category rows: the
paper's overall rows are not the means of its category rows.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..agreement.stats import macro_prf
from .choices import DEFAULT_SEED, DISTRIBUTIONS

OVERALL = "overall"
# Figure 4 shows its thresholds only on an axis; tenths from 0 to 1 cover it.
THRESHOLDS: tuple[float, ...] = tuple(round(i / 10, 1) for i in range(11))


@dataclass(frozen=True)
class Prf:
    n: int
    precision: float  # percent
    recall: float
    f1: float  # the mean of the per-class F1, not the F1 of precision and recall

    def as_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "macro_precision": self.precision, "macro_recall": self.recall,
                "macro_f1": self.f1}


def prf(truth: Sequence[bool], predicted: Sequence[bool]) -> Prf:
    """Macro P / R / F1 over the two classes yes and no, people as the reference."""
    p, r, f = macro_prf(list(truth), list(predicted))
    return Prf(len(truth), p, r, f)


def _groups(categories: Sequence[str]) -> dict[str, list[int]]:
    groups: dict[str, list[int]] = {}
    for i, category in enumerate(categories):
        groups.setdefault(category, []).append(i)
    return dict(sorted(groups.items()))


def prf_by_category(categories: Sequence[str], truth: Sequence[bool],
                    predicted: Sequence[bool]) -> dict[str, Prf]:
    """One row per category, then ``overall`` over every item pooled."""
    out = {c: prf([truth[i] for i in idx], [predicted[i] for i in idx])
           for c, idx in _groups(categories).items()}
    out[OVERALL] = prf(truth, predicted)
    return out


def random_predictions(categories: Sequence[str], truth: Sequence[bool],
                       distribution: str = "uniform", seed: int = DEFAULT_SEED) -> list[bool]:
    """The random baseline: each item yes with probability 1/2 (``uniform``) or with the
    share of yes among the people's labels of its category (``prior``); one seeded draw per
    item, in the order given."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution {distribution!r}: use {' or '.join(DISTRIBUTIONS)}")
    shares = {c: sum(truth[i] for i in idx) / len(idx)
              for c, idx in _groups(categories).items()}
    rng = random.Random(seed)
    return [rng.random() < (0.5 if distribution == "uniform" else shares[c])
            for c in categories]


def sweep(categories: Sequence[str], truth: Sequence[bool], fractions: Sequence[float],
          thresholds: Iterable[float] = THRESHOLDS) -> dict[float, dict[str, Prf]]:
    """Per threshold t, the scores of "positive when at least t of the questions were
    answered correctly", per category and overall."""
    return {t: prf_by_category(categories, truth, [f >= t for f in fractions])
            for t in thresholds}


def best_thresholds(table: Mapping[float, Mapping[str, Prf]]) -> dict[str, tuple[float, float]]:
    """Per category, the threshold with the highest macro F1 (the lowest on ties)."""
    best: dict[str, tuple[float, float]] = {}
    for t in sorted(table):
        for group, row in table[t].items():
            if group not in best or row.f1 > best[group][1]:
                best[group] = (t, row.f1)
    return best
