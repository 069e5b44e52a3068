"""The run aggregate over items: means, every dimension, every level, breakdowns by domain and
difficulty, labels and costs.

Errors are counted apart and never scored. Aggregates are computed over items sorted by key,
so they do not depend on the order in which items finished (serial and xdist runs give
identical numbers).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..backends.prices import sum_costs
from ..rubric.facts import ALL_DIMS, C_DIMS, GATE, LEVELS
from .item import ItemScores, mean, score_item

TREE_KEYS: tuple[str, ...] = (GATE.key, *(node.key for node in LEVELS))


@dataclass(frozen=True)
class Scored:
    """What aggregation needs from one item (a judged item, or an error with no scores)."""

    key: str
    domain: str
    difficulty: str
    status: str  # "passed", "failed" or "error"
    scores: Mapping[str, int | None]
    labels: tuple[str, ...] = ()
    cost_usd: float | None = 0.0  # None: unknown
    confidence: Mapping[str, float | None] = field(default_factory=dict)  # the judge's, per C
    generation_cost_usd: float | None = None


def _summary(items: Sequence[Scored], scored: Mapping[int, ItemScores]) -> dict[str, Any]:
    judged = [i for i in items if i.status != "error"]
    per_item = [scored[id(i)] for i in judged]
    out: dict[str, Any] = {
        "n": len(items),
        "judged": len(judged),
        "errors": len(items) - len(judged),
        "passed": sum(i.status == "passed" for i in items),
        "failed": sum(i.status == "failed" for i in items),
        "c_mean": mean(s.c_mean for s in per_item),
        "d_mean": mean(s.d_mean for s in per_item),
        "overall": mean(s.overall for s in per_item),
        "gate_pass_rate": (sum(s.gate_pass for s in per_item) / len(per_item)
                           if per_item else None),
        "tree": {k: mean(s.tree[k] for s in per_item) for k in TREE_KEYS},
        "tree_n": {k: sum(s.tree[k] is not None for s in per_item) for k in TREE_KEYS},
        # The judge's mean confidence per C dimension (null where no judgment gave one).
        "judge_confidence": {d: mean(i.confidence.get(d) for i in judged) for d in C_DIMS},
    }
    return out


def aggregate(items: Iterable[Scored]) -> dict[str, Any]:
    """The run aggregate: means, every dimension, every level, breakdowns, labels, costs."""
    ordered = sorted(items, key=lambda i: i.key)
    judged = [i for i in ordered if i.status != "error"]
    # Each item's means once, for the run and for its domain and difficulty.
    scored = {id(i): score_item(i.scores) for i in judged}
    result = _summary(ordered, scored)
    result["dims"] = {
        dim: {"mean": mean(i.scores.get(dim) for i in judged),
              "n": sum(i.scores.get(dim) is not None for i in judged)}
        for dim in ALL_DIMS
    }
    by_domain: dict[str, list[Scored]] = defaultdict(list)
    by_difficulty: dict[str, list[Scored]] = defaultdict(list)
    for item in ordered:
        by_domain[item.domain].append(item)
        by_difficulty[item.difficulty].append(item)
    result["by_domain"] = {k: _summary(v, scored) for k, v in sorted(by_domain.items())}
    result["by_difficulty"] = {k: _summary(v, scored) for k, v in sorted(by_difficulty.items())}
    counts = Counter(label for i in judged for label in set(i.labels))
    result["labels"] = dict(sorted(counts.items()))
    # An error's cost counts where it is known; a judged item of unknown cost makes it unknown.
    result["cost_usd"] = sum_costs(i.cost_usd for i in ordered
                                   if i.cost_usd is not None or i.status != "error")
    # The image backend's reported cost of the sheets (the paper's cost axis), where known.
    generation = [i.generation_cost_usd for i in ordered if i.generation_cost_usd is not None]
    result["generation_cost_usd"] = math.fsum(generation) if generation else None
    result["generation_cost_n"] = len(generation)
    return result
