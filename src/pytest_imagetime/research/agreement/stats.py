"""Agreement statistics on paired labels, in plain Python and numpy.

Every function takes two equally long sequences of complete pairs (the caller drops
missing values). A statistic that is undefined for its input (no pairs, a constant
sequence, chance agreement of 1) is ``nan``, never an exception, so a report can print
it as "n/a".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np
import numpy.typing as npt

NAN = float("nan")
WEIGHTS = ("linear", "quadratic")


def _pairs(a: Sequence[object], b: Sequence[object]) -> int:
    if len(a) != len(b):
        raise ValueError(f"paired sequences differ in length: {len(a)} and {len(b)}")
    return len(a)


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa: (p_o - p_e) / (1 - p_e), chance from each rater's own marginals."""
    n = _pairs(a, b)
    if n < 2:
        return NAN
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    count_a, count_b = Counter(a), Counter(b)
    chance = sum(count_a[k] * count_b[k] for k in count_a) / (n * n)
    if math.isclose(chance, 1.0):
        return NAN  # both raters used one and the same class: no room beyond chance
    return (observed - chance) / (1.0 - chance)


def weighted_kappa(a: Sequence[int], b: Sequence[int], *, weights: str = "quadratic",
                   lo: int = 0, hi: int = 10) -> float:
    """Cohen's weighted kappa on the ordinal scale lo..hi: 1 - sum(w*O) / sum(w*E).

    Disagreement weights are |i-j| (linear) or (i-j)^2 (quadratic); scaling them by the
    range would cancel out, so the scale only bounds which values are allowed.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, not {weights!r}")
    n = _pairs(a, b)
    outside = [v for v in (*a, *b) if not lo <= v <= hi]
    if outside:
        raise ValueError(f"value {outside[0]} outside the scale {lo}..{hi}")
    if n < 2:
        return NAN
    k = hi - lo + 1
    observed = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        observed[int(x) - lo, int(y) - lo] += 1
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / n
    idx = np.arange(k)
    gap = np.abs(idx[:, None] - idx[None, :]).astype(float)
    w = gap if weights == "linear" else gap**2
    chance_disagreement = float((w * expected).sum())
    if chance_disagreement == 0.0:
        return NAN
    return 1.0 - float((w * observed).sum()) / chance_disagreement


def _ranks(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks from 1, ties sharing their average rank."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranks[order[start:end + 1]] = (start + end) / 2.0 + 1.0
        start = end + 1
    return ranks


def _pearson(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    if len(x) < 2:
        return NAN
    dx, dy = x - x.mean(), y - y.mean()
    denom = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    if denom == 0.0:
        return NAN
    return max(-1.0, min(1.0, float((dx * dy).sum()) / denom))


def _floats(x: Sequence[float]) -> npt.NDArray[np.float64]:
    return np.asarray(x, dtype=float)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho: Pearson's r between the average ranks."""
    _pairs(x, y)
    return _pearson(_ranks(_floats(x)), _ranks(_floats(y)))


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b: (P - Q) / sqrt((n0 - n1)(n0 - n2)), ties counted on each side."""
    n = _pairs(x, y)
    if n < 2:
        return NAN
    xs, ys = _floats(x), _floats(y)
    net = 0  # concordant minus discordant pairs
    tied_x = tied_y = 0
    for i in range(n - 1):  # one row of pairs at a time: O(n) memory for large tables
        sx, sy = np.sign(xs[i + 1:] - xs[i]), np.sign(ys[i + 1:] - ys[i])
        net += int((sx * sy).sum())
        tied_x += int((sx == 0).sum())
        tied_y += int((sy == 0).sum())
    n0 = n * (n - 1) // 2
    denom = math.sqrt(float(n0 - tied_x) * float(n0 - tied_y))
    if denom == 0.0:
        return NAN
    return max(-1.0, min(1.0, net / denom))


def point_biserial(values: Sequence[float], binary: Sequence[bool]) -> float:
    """Point-biserial r: Pearson's r between a continuous value and a 0/1 variable."""
    _pairs(values, binary)
    return _pearson(_floats(values), np.asarray([1.0 if v else 0.0 for v in binary]))


def accuracy(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Share of pairs with equal labels, in percent."""
    n = _pairs(a, b)
    if n == 0:
        return NAN
    return 100.0 * sum(x == y for x, y in zip(a, b, strict=True)) / n


def macro_prf(reference: Sequence[Hashable],
              predicted: Sequence[Hashable]) -> tuple[float, float, float]:
    """Macro-averaged precision, recall and F1 in percent, ``reference`` as the truth.

    Classes are those seen on either side; a per-class ratio with a zero denominator counts
    as 0, and macro F1 is the mean of the per-class F1 scores (scikit-learn's conventions).
    """
    n = _pairs(reference, predicted)
    if n == 0:
        return NAN, NAN, NAN
    classes = set(reference) | set(predicted)
    hits = Counter(r for r, p in zip(reference, predicted, strict=True) if r == p)
    true_count, predicted_count = Counter(reference), Counter(predicted)
    precisions, recalls, f1s = [], [], []
    for c in sorted(classes, key=repr):  # a fixed order: sums reproducible to the bit
        p = hits[c] / predicted_count[c] if predicted_count[c] else 0.0
        r = hits[c] / true_count[c] if true_count[c] else 0.0
        precisions.append(p)
        recalls.append(r)
        f1s.append(2 * p * r / (p + r) if p + r else 0.0)
    k = len(classes)
    return 100.0 * sum(precisions) / k, 100.0 * sum(recalls) / k, 100.0 * sum(f1s) / k


def mae(x: Sequence[float], y: Sequence[float]) -> float:
    """Mean absolute difference."""
    n = _pairs(x, y)
    if n == 0:
        return NAN
    return float(np.abs(_floats(x) - _floats(y)).mean())


def finite(value: float) -> float | None:
    """The statistic as a report shows it: None (JSON null, printed "n/a") when undefined."""
    return value if math.isfinite(value) else None
