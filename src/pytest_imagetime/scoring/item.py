"""One item's scores: the C and D means, Overall, each tree level and the protocol gate.

Nulls are omitted, never counted as 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..rubric.facts import C_DIMS, D_DIMS, GATE, GATE_C0_MIN, LEVELS, TreeNode


def mean(values: Iterable[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


@dataclass(frozen=True)
class ItemScores:
    c_mean: float | None
    d_mean: float | None
    overall: float | None
    tree: Mapping[str, float | None]  # "gate" and L0..L6
    gate_pass: bool


def _dims_mean(scores: Mapping[str, int | None], dims: Iterable[str]) -> float | None:
    """``mean`` of one item's scores over some dimensions, as a plain loop: every item of a
    run goes through here a dozen times. Scores are integers, so their sum is exact."""
    total = 0
    count = 0
    for dim in dims:
        value = scores.get(dim)
        if value is not None:
            total += value
            count += 1
    return total / count if count else None


def node_score(node: TreeNode, scores: Mapping[str, int | None]) -> float | None:
    """T = 0.5 mean(C) + 0.5 mean(D); one family alone when the other has no applicable dims."""
    c = _dims_mean(scores, node.c_dims)
    d = _dims_mean(scores, node.d_dims)
    if c is None or d is None:
        return c if d is None else d
    return 0.5 * c + 0.5 * d


def score_item(scores: Mapping[str, int | None]) -> ItemScores:
    c = _dims_mean(scores, C_DIMS)
    d = _dims_mean(scores, D_DIMS)
    overall = None if c is None and d is None else (
        c if d is None else d if c is None else (c + d) / 2)
    tree = {GATE.key: node_score(GATE, scores)}
    tree.update({node.key: node_score(node, scores) for node in LEVELS})
    c0 = scores.get("C0")
    return ItemScores(c, d, overall, tree, gate_pass=c0 is not None and c0 >= GATE_C0_MIN)
