"""What a judge returns for one sheet, checked against the rubric and the case.

A judgment that fails these checks is never turned into a score: the caller gets a
JudgeError with the reason, and the item becomes an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..cases.model import Case
from .facts import (
    ALL_DIMS,
    C_DIMS,
    EVIDENCE_LABELS,
    FAILURE_LABELS,
    SCORE_MAX,
    SCORE_MIN,
    Setting,
    nullable_dims,
)

JSON = Any  # values that json.dumps accepts


class JudgeError(Exception):
    """The judge could not produce a valid judgment (network, refusal, invalid output)."""


@dataclass(frozen=True)
class Verdict:
    """A judge's answer on one predicate (holds?) or forbidden state (observed?)."""

    id: str
    value: bool | None
    evidence: str = ""

    def to_json(self) -> dict[str, JSON]:
        return {"id": self.id, "value": self.value, "evidence": self.evidence}


@dataclass(frozen=True)
class Judgment:
    judge: str
    judge_model: str
    rubric_version: str
    prompt_version: str | None
    scores: Mapping[str, int | None]
    confidence: Mapping[str, float | None] = field(default_factory=dict)
    predicates: tuple[Verdict, ...] = ()
    forbidden: tuple[Verdict, ...] = ()
    labels: tuple[str, ...] = ()
    rationale: str = ""
    raw: JSON = None
    date: str = ""
    latency_s: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = 0.0  # None: the judge's model has no known price
    tokens_cached: int = 0  # the part of tokens_in read from the provider's prompt cache
    evaluates_predicates: bool = False
    # The judge's layout answer (panel_count, is_2x2_grid, order_as_expected,
    # all_panels_readable, and in the scaffold setting top_left_matches_reference); None for
    # judges that do not read the layout. It caps C0 (caps.layout_labels).
    layout: Mapping[str, JSON] | None = None

    def to_json(self) -> dict[str, JSON]:
        """What ``dataclasses.asdict`` gives, built field by field: its deep copy of ``raw``
        (a judge's whole answer) cost more than the rest of storing a judgment. ``raw`` is
        shared, not copied: the result is for serialising."""
        data = {name: getattr(self, name) for name in _JUDGMENT_FIELDS}
        data["scores"] = dict(self.scores)
        data["confidence"] = dict(self.confidence)
        data["layout"] = None if self.layout is None else dict(self.layout)
        data["predicates"] = tuple(v.to_json() for v in self.predicates)
        data["forbidden"] = tuple(v.to_json() for v in self.forbidden)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, JSON]) -> Judgment:
        values = dict(data)
        values["predicates"] = tuple(Verdict(**v) for v in values.get("predicates", ()))
        values["forbidden"] = tuple(Verdict(**v) for v in values.get("forbidden", ()))
        values["labels"] = tuple(values.get("labels", ()))
        return cls(**values)


_JUDGMENT_FIELDS = tuple(f.name for f in fields(Judgment))


def validate_judgment(judgment: Judgment, case: Case, setting: Setting,
                      scored_dims: frozenset[str] | None = None) -> None:
    """Raise JudgeError unless the judgment fits the rubric and this case.

    ``scored_dims`` names the dimensions this judge scores at all (a pixel judge scores a few);
    within them, a null is allowed only where the rubric allows it, and a number never where
    the dimension does not apply.
    """
    problems: list[str] = []
    nullable = nullable_dims(setting, case.applicable)
    dims = scored_dims if scored_dims is not None else frozenset(ALL_DIMS)
    unknown = set(judgment.scores) - set(ALL_DIMS)
    if unknown:
        problems.append(f"unknown dimensions {sorted(unknown)}")
    for dim in ALL_DIMS:
        value = judgment.scores.get(dim)
        if value is None:
            if dim in dims and dim not in nullable:
                problems.append(f"{dim} is null but applies to this case")
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(f"{dim}={value!r} is not an integer")
        elif not SCORE_MIN <= value <= SCORE_MAX:
            problems.append(f"{dim}={value} is outside {SCORE_MIN}-{SCORE_MAX}")
        elif dim in nullable:
            problems.append(f"{dim} must be null for this case ({setting})")
    for dim, conf in judgment.confidence.items():
        if dim not in C_DIMS:
            problems.append(f"confidence given for {dim}, which is not a C dimension")
        elif conf is not None and not 0.0 <= conf <= 1.0:
            problems.append(f"confidence of {dim} is {conf}, outside [0, 1]")
    if judgment.confidence:  # a judge that gives confidences gives one with every C score
        for dim in C_DIMS:
            has_score = judgment.scores.get(dim) is not None
            has_conf = judgment.confidence.get(dim) is not None
            if has_score and not has_conf:
                problems.append(f"{dim} has a score but no confidence")
            elif has_conf and not has_score:
                problems.append(f"{dim} has a confidence but no score")
    bad_labels = sorted(set(judgment.labels) - set(FAILURE_LABELS) - set(EVIDENCE_LABELS))
    if bad_labels:
        problems.append(f"failure labels not in the vocabulary: {bad_labels}")
    if judgment.evaluates_predicates:
        want_p = {p.id for p in case.predicates}
        got_p = {v.id for v in judgment.predicates}
        if want_p != got_p:
            problems.append(f"predicate verdicts for {sorted(got_p)}, expected {sorted(want_p)}")
        want_f = {f.id for f in case.forbidden}
        got_f = {v.id for v in judgment.forbidden}
        if want_f != got_f:
            problems.append(f"forbidden-state verdicts for {sorted(got_f)}, expected "
                            f"{sorted(want_f)}")
    if problems:
        raise JudgeError(f"invalid judgment from {judgment.judge}: " + "; ".join(problems))
