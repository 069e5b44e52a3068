"""Point-biserial correlation with the t-test of its significance, in plain Python.

    t = r * sqrt((n - 2) / (1 - r^2)),   df = n - 2,   p = P(|T_df| >= |t|)  (two-sided)

The tail of Student's t is the regularised incomplete beta function
I_{df / (df + t^2)}(df / 2, 1 / 2), evaluated by its continued fraction (Lentz's method), so
no scipy is needed at run time; the tests compare it with ``scipy.stats.pointbiserialr``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..agreement.stats import point_biserial

ALPHA = 0.05  # the asterisk of the paper's Table 3; its level is not stated there
_EPS = 1e-15
_TINY = 1e-300
_STEPS = 500


@dataclass(frozen=True)
class Correlation:
    r: float  # nan when undefined
    t: float
    p: float  # two-sided
    n: int

    def significant(self, alpha: float = ALPHA) -> bool:
        return math.isfinite(self.p) and self.p < alpha


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (Numerical Recipes' betacf)."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _STEPS + 1):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) for x in [0, 1]."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_two_sided(t: float, df: int) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


def point_biserial_test(values: Sequence[float], binary: Sequence[bool]) -> Correlation:
    """Point-biserial r between scores and yes/no labels, with its two-sided t-test."""
    n = len(values)
    r = point_biserial(values, binary)
    if not math.isfinite(r) or n < 3:
        return Correlation(r, math.nan, math.nan, n)
    df = n - 2
    t = math.inf if abs(r) >= 1.0 else r * math.sqrt(df / (1.0 - r * r))
    return Correlation(r, math.copysign(abs(t), r), t_two_sided(t, df), n)
