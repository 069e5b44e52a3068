"""A stratified random sample: every (domain, model) stratum in proportion to its size.

Allocation is Hamilton's largest-remainder method on exact fractions, so the sizes add up to
the sample and each stratum gets its proportional share rounded down or up. When the sample
is at least as large as the number of strata, every stratum gets at least one item (taken
from the largest allocations), so no domain or model goes unlabelled. The draw depends only
on the seed and the set of items, not on the order the runs were given in.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Mapping, Sequence
from fractions import Fraction
from typing import TypeVar

T = TypeVar("T")
S = TypeVar("S", bound=Hashable)


def allocate(sizes: Mapping[S, int], total: int) -> dict[S, int]:
    """How many to draw from each stratum so that the counts add up to ``total``."""
    population = sum(sizes.values())
    total = max(0, min(total, population))
    if total == 0:
        return dict.fromkeys(sizes, 0)
    quotas = {s: Fraction(total * n, population) for s, n in sizes.items()}
    counts = {s: int(q) for s, q in quotas.items()}
    order = sorted(sizes, key=lambda s: (-(quotas[s] - counts[s]), repr(s)))
    for s in order[:total - sum(counts.values())]:
        counts[s] += 1
    if total >= len(sizes):
        for s in sorted(sizes, key=repr):
            if counts[s] == 0 and sizes[s] > 0:
                donor = max(sizes, key=lambda d: (counts[d], repr(d)))
                counts[donor] -= 1
                counts[s] = 1
    return counts


def stratified_sample(items: Sequence[T], total: int, seed: int,
                      stratum: Callable[[T], tuple[str, ...]],
                      ident: Callable[[T], tuple[str, ...]]) -> list[T]:
    """``total`` items drawn per stratum, in a seeded random order (so an annotator does
    not see one model's sheets in a row)."""
    strata: dict[tuple[str, ...], list[T]] = {}
    for item in sorted(items, key=ident):
        strata.setdefault(stratum(item), []).append(item)
    counts = allocate({s: len(v) for s, v in strata.items()}, total)
    rng = random.Random(seed)
    chosen = [item for s in sorted(strata) for item in rng.sample(strata[s], counts[s])]
    rng.shuffle(chosen)
    return chosen
