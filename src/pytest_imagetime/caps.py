"""Applying the rubric's conservative caps to a validated judgment.

Caps only ever lower a score, never raise one, and never turn a null into a number. The
labels that trigger them come from the judge and from the pixel metrics, so copied phases
found in the pixels cap the phase scores even if a judge missed them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .rubric import CAP_RULES, Applicability, CapRule


@dataclass(frozen=True)
class AppliedCap:
    rule: str
    condition: str
    labels: tuple[str, ...]  # the labels that fired the rule
    lowered: Mapping[str, tuple[int, int]]  # dim -> (before, after); only dims that changed


def _rule_applies(rule: CapRule, applicable: Applicability) -> bool:
    if rule.only_if == "constraint":
        return applicable.constraint
    if rule.only_if == "quantity":
        return applicable.quantity
    return True


def apply_caps(scores: Mapping[str, int | None], labels: Iterable[str],
               applicable: Applicability) -> tuple[dict[str, int | None], tuple[AppliedCap, ...]]:
    """Capped scores and the caps that fired (a rule fires when any of its labels is present)."""
    present = set(labels)
    capped = dict(scores)
    applied: list[AppliedCap] = []
    for rule in CAP_RULES:
        hits = sorted(present & rule.labels)
        if not hits or not _rule_applies(rule, applicable):
            continue
        lowered: dict[str, tuple[int, int]] = {}
        for dim, limit in rule.limits.items():
            value = capped.get(dim)
            if value is not None and value > limit:
                lowered[dim] = (value, limit)
                capped[dim] = limit
        applied.append(AppliedCap(rule.key, rule.condition, tuple(hits), lowered))
    return capped, tuple(applied)
