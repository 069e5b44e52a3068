"""Repeated judging: K judgments of one sheet combined into one, conservatively.

Judges are noisy. Each dimension takes the lower median of its K scores (between two scores,
the lower, as the rubric asks), confidences their mean; a predicate holds and a forbidden
state is absent only when more than half of the judgments say so; a failure label counts
when at least half name it; the layout answer likewise. Costs and tokens add up. A
dimension null in one repeat is null in all of them (validation guarantees it), so nulls
stay nulls.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..backends.prices import sum_costs
from .facts import ALL_DIMS
from .judgment import Judgment, Verdict


def lower_median(values: Sequence[int]) -> int:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]


def _majority(verdicts: Sequence[Verdict], want: bool) -> Verdict:
    """``want`` (True for predicates, False for forbidden states) only with a majority."""
    agree = sum(v.value is want for v in verdicts)
    value: bool | None = want if agree * 2 > len(verdicts) else (not want)
    if value is not want and all(v.value is None for v in verdicts):
        value = None
    evidence = " | ".join(dict.fromkeys(v.evidence for v in verdicts if v.evidence))
    return Verdict(verdicts[0].id, value, evidence)


def combine(judgments: Sequence[Judgment]) -> Judgment:
    if len(judgments) == 1:
        return judgments[0]
    first = judgments[0]
    scores: dict[str, int | None] = {}
    for dim in ALL_DIMS:
        values = [j.scores.get(dim) for j in judgments]
        present = [v for v in values if v is not None]
        scores[dim] = lower_median(present) if len(present) == len(values) else None
    confidence: dict[str, float | None] = {}
    for dim in first.confidence:
        confidences = [j.confidence.get(dim) for j in judgments]
        known = [v for v in confidences if v is not None]
        confidence[dim] = math.fsum(known) / len(known) if known else None
    labels = Counter(label for j in judgments for label in set(j.labels))
    by_id = {v.id: [w for j in judgments for w in j.predicates if w.id == v.id]
             for v in first.predicates}
    forbidden = {v.id: [w for j in judgments for w in j.forbidden if w.id == v.id]
                 for v in first.forbidden}
    return Judgment(
        judge=first.judge, judge_model=first.judge_model, rubric_version=first.rubric_version,
        prompt_version=first.prompt_version, scores=scores, confidence=confidence,
        predicates=tuple(_majority(vs, True) for vs in by_id.values()),
        forbidden=tuple(_majority(vs, False) for vs in forbidden.values()),
        labels=tuple(sorted(label for label, n in labels.items() if n * 2 >= len(judgments))),
        rationale=" | ".join(j.rationale for j in judgments if j.rationale),
        raw={"repeats": [j.raw for j in judgments]}, date=first.date,
        latency_s=round(math.fsum(j.latency_s for j in judgments), 3),
        tokens_in=sum(j.tokens_in for j in judgments),
        tokens_out=sum(j.tokens_out for j in judgments),
        tokens_cached=sum(j.tokens_cached for j in judgments),
        cost_usd=sum_costs(j.cost_usd for j in judgments),
        evaluates_predicates=first.evaluates_predicates,
        layout=_combined_layout([j.layout for j in judgments]),
    )


def _combined_layout(layouts: Sequence[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """The repeats' layout answers as one: a yes needs a strict majority (a tie reads as
    no, as a label named by half the repeats counts), a panel count the most common one
    (a tie goes to the count that is not 4)."""
    given = [layout for layout in layouts if layout]
    if not given:
        return None
    combined: dict[str, Any] = {}
    for key in dict.fromkeys(k for layout in given for k in layout):
        values = [layout.get(key) for layout in given]
        if all(isinstance(v, bool) for v in values):
            combined[key] = sum(v is True for v in values) * 2 > len(values)
        else:
            counts = Counter(values)
            combined[key] = max(counts, key=lambda v: (counts[v], v != 4))
    return combined
