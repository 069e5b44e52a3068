"""Applying the rubric's conservative caps to a validated judgment.

Caps only ever lower a score, never raise one, and never turn a null into a number. The
labels that trigger them come from the judge, from the judge's layout answer, from the
pixel metrics and (evidence caps) from subjects grounded per panel by a detector, so copied
phases found in the pixels cap the phase scores even if a judge missed them, and a sheet the
judge reads as not four ordered panels fails the layout gate whatever C0 it gave.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..cases.model import Case
from .facts import CAP_RULES, EVIDENCE_CAP_RULES, CapScope, Setting


@dataclass(frozen=True)
class AppliedCap:
    rule: str
    condition: str
    labels: tuple[str, ...]  # the labels that fired the rule
    lowered: Mapping[str, tuple[int, int]]  # dim -> (before, after); only dims that changed

    def describe(self) -> str:
        """One line that says which rule fired, why, and what it lowered; a rule whose limits
        were all met already says so, not that it "lowered nothing"."""
        if self.lowered:
            effect = "lowered " + ", ".join(f"{d} {a}->{b}" for d, (a, b) in self.lowered.items())
        else:
            effect = "no score changed: every capped score was already at or below its limit"
        return f"{self.rule}: {self.condition} (labels: {', '.join(self.labels)}; {effect})"


def case_scopes(case: Case, setting: Setting) -> frozenset[CapScope]:
    """The cap scopes (``rubric.CAP_SCOPES``) this case and setting fall under."""
    scopes: set[CapScope] = {"always"}
    applicable = case.applicable
    if applicable.constraint:
        scopes.add("constraint")
    if (applicable.quantity or "L3" in case.levels or case.entities.get("containers")
            or case.entities.get("recipients")):
        scopes.add("source_target")
    if "L2" in case.levels:
        scopes.add("motion")
    if setting == "scaffold":
        scopes.add("scaffold")
    return frozenset(scopes)


def layout_labels(layout: Mapping[str, Any] | None, setting: Setting) -> tuple[str, ...]:
    """The failure labels the judge's own layout answer implies: a sheet it reads as not four
    readable panels in a 2x2 grid in order is not a usable sheet; in the scaffold setting, a
    top-left panel that does not keep the reference fails the gate too."""
    if not layout:
        return ()
    labels: list[str] = []
    if (layout.get("panel_count") != 4 or layout.get("is_2x2_grid") is False
            or layout.get("order_as_expected") is False
            or layout.get("all_panels_readable") is False):
        labels.append("not_2x2_sheet")
    if setting == "scaffold" and layout.get("top_left_matches_reference") is False:
        labels.append("reference_not_kept")
    return tuple(labels)


def apply_caps(scores: Mapping[str, int | None], labels: Iterable[str],
               scopes: frozenset[CapScope]) -> tuple[dict[str, int | None], tuple[AppliedCap, ...]]:
    """Capped scores and the caps that fired (a rule fires when any of its labels is present
    and the case is in the rule's scope)."""
    present = set(labels)
    capped = dict(scores)
    applied: list[AppliedCap] = []
    for rule in (*CAP_RULES, *EVIDENCE_CAP_RULES):
        hits = sorted(present & rule.labels)
        if not hits or rule.only_if not in scopes:
            continue
        lowered: dict[str, tuple[int, int]] = {}
        for dim, limit in rule.limits.items():
            value = capped.get(dim)
            if value is not None and value > limit:
                lowered[dim] = (value, limit)
                capped[dim] = limit
        applied.append(AppliedCap(rule.key, rule.condition, tuple(hits), lowered))
    return capped, tuple(applied)
