"""The order probe's metrics, from the answers and ratings alone. Definitions:
docs/order-probe.md.

Pair probes follow TimeCausality's consistency test: every pair of panels is shown twice,
the earlier one on top (the right answer is ``A``) and reversed (the right answer is ``B``).
A failed request is no answer: it is counted apart and never scored as wrong. The Reasoning
and Inferring scores are TimeCausality's: the mean 0-5 rating over the rated answers.
Undefined metrics (nothing answered) are NaN.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..agreement.stats import accuracy, kendall_tau, macro_prf

NAN = float("nan")
STAGES = 4


@dataclass(frozen=True)
class PairAnswer:
    group: str  # one pair of panels of one sheet: its two presentations share the group
    reversed: bool  # False: the earlier panel on top; True: the later one on top
    answer: str  # "A" (top first) or "B" (bottom first)

    @property
    def truth(self) -> str:
        return "B" if self.reversed else "A"

    @property
    def right(self) -> bool:
        return self.answer == self.truth


@dataclass(frozen=True)
class OrderAnswer:
    ranks: tuple[int, ...]  # the judge's place (0 = earliest) for t1, t2, t3, t4

    @property
    def exact(self) -> bool:
        return self.ranks == tuple(range(STAGES))

    @property
    def tau(self) -> float:
        return kendall_tau(list(range(len(self.ranks))), list(self.ranks))


def group_score(answers: Sequence[PairAnswer]) -> float:
    """Percent of pairs answered right in both presentations, over pairs with both answered."""
    seen: dict[str, dict[bool, bool]] = {}
    for a in answers:
        seen.setdefault(a.group, {})[a.reversed] = a.right
    complete = [v for v in seen.values() if len(v) == 2]
    if not complete:
        return NAN
    return 100.0 * sum(all(v.values()) for v in complete) / len(complete)


def position_bias(answers: Sequence[PairAnswer]) -> float:
    """Share of answers naming the top panel, minus one half: 0 unbiased, +0.5 always top,
    -0.5 always bottom. With as many forward as reversed answers it is (ACC - ACC-R) / 200."""
    if not answers:
        return NAN
    return sum(a.answer == "A" for a in answers) / len(answers) - 0.5


def pair_metrics(answers: Sequence[PairAnswer]) -> dict[str, float]:
    forward = [a for a in answers if not a.reversed]
    backward = [a for a in answers if a.reversed]
    return {
        "acc": accuracy([a.truth for a in forward], [a.answer for a in forward]),
        "acc_r": accuracy([a.truth for a in backward], [a.answer for a in backward]),
        "group": group_score(answers),
        # TimeCausality's macro F1: classes "A first" and "B first" over every presentation.
        "f1": macro_prf([a.truth for a in answers], [a.answer for a in answers])[2],
        "position_bias": position_bias(answers),
    }


def order_metrics(answers: Sequence[OrderAnswer]) -> dict[str, float]:
    if not answers:
        return {"exact_order": NAN, "kendall_tau": NAN}
    taus = [a.tau for a in answers]
    return {"exact_order": 100.0 * sum(a.exact for a in answers) / len(answers),
            "kendall_tau": statistics.fmean(taus) if not any(map(math.isnan, taus)) else NAN}


def ranks_from_labels(order: Sequence[str], cells: Sequence[int]) -> tuple[int, ...]:
    """The judge's place for each stage, from its labels in time order (``order``) and the
    stage each labelled cell shows (``cells[k]`` is the stage of label ``k + 1``)."""
    ranks = [0] * len(cells)
    for place, label in enumerate(order):
        ranks[cells[int(label) - 1]] = place
    return tuple(ranks)


def mean_rating(ratings: Sequence[int]) -> float:
    """TimeCausality's Reasoning or Inferring score: the mean rating (0-5) over the answers
    rated; a failed answer or rating is not among them."""
    return statistics.fmean(ratings) if ratings else NAN
