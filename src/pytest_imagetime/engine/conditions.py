"""What an item asserts, and the short explanation a failing item shows."""

from __future__ import annotations

from collections.abc import Sequence

from ..cases.model import Case
from ..rubric.facts import GATE_C0_MIN, LEVEL_KEYS
from .runner import ItemOutcome


def unmet_conditions(case: Case, outcome: ItemOutcome, pass_threshold: float) -> list[str]:
    """Every benchmark condition the item does not meet, as one line each."""
    record, judgment = outcome.record, outcome.judgment
    unmet: list[str] = []
    c0 = record.scores.get("C0")
    if c0 is None or c0 < GATE_C0_MIN:
        unmet.append(f"layout gate: C0 = {c0} (needs >= {GATE_C0_MIN}): not a usable ordered "
                     "2x2 sheet")
    if judgment.evaluates_predicates:
        texts = {p.id: p for p in case.predicates}
        for verdict in judgment.predicates:
            if verdict.value is not True:
                p = texts[verdict.id]
                state = "not satisfied" if verdict.value is False else "undecided"
                unmet.append(f"predicate {p.id} ({p.stage}) {state}: {p.text}"
                             + (f" [judge: {verdict.evidence}]" if verdict.evidence else ""))
        forbidden = {f.id: f for f in case.forbidden}
        for verdict in judgment.forbidden:
            if verdict.value is not False:
                state = "observed" if verdict.value else "not ruled out"
                unmet.append(f"forbidden state {verdict.id} {state}: {forbidden[verdict.id].text}"
                             + (f" [judge: {verdict.evidence}]" if verdict.evidence else ""))
    for cap in outcome.caps:
        unmet.append(f"cap {cap.describe()}")
    overall = record.overall
    if overall is None or overall < pass_threshold:
        shown = "none" if overall is None else f"{overall:.2f}"
        unmet.append(f"Overall {shown} is below the pass threshold {pass_threshold:g}")
    return unmet


def _fmt(value: float | int | None) -> str:
    return "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def explain(case: Case, outcome: ItemOutcome, unmet: Sequence[str]) -> str:
    r = outcome.record
    lines = [f"{case.id} [{r.model}] judged by {r.judge}: "
             f"{len(unmet)} condition{'s' if len(unmet) != 1 else ''} not met"]
    lines += [f"  - {u}" for u in unmet]
    levels = " ".join(f"{k} {_fmt(r.tree.get(k))}" for k in LEVEL_KEYS)
    lines.append(f"  scores: C mean {_fmt(r.c_mean)} | D mean {_fmt(r.d_mean)} | "
                 f"Overall {_fmt(r.overall)} | protocol node {_fmt(r.tree.get('gate'))} | "
                 f"{levels}")
    scored = " ".join(f"{d}={v}" for d, v in r.scores.items() if v is not None)
    lines.append(f"  dims: {scored}")
    lines.append(f"  labels: {', '.join(r.labels) or 'none'}")
    lines.append(f"  image: {r.image}")
    return "\n".join(lines)
