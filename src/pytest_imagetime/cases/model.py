"""The Case model: a case and its parts (setup, predicates, forbidden outcomes) as frozen
data, the problems a case file can have, and the case as plain data for the judge and the spec
hash.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from ..rubric.facts import Applicability

CASE_FORMAT = "cases/1"
STAGES: tuple[str, ...] = ("t1", "t2", "t3", "t4")
ENTITY_ROLES: tuple[str, ...] = (
    "actors", "targets", "tools", "containers", "recipients", "obstacles", "non_targets",
)
Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a case file, located as precisely as the file allows."""

    path: str
    message: str
    line: int | None = None
    case_id: str | None = None
    field: str | None = None
    severity: Severity = "error"

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        parts = [where]
        if self.case_id:
            parts.append(f"case {self.case_id!r}")
        if self.field:
            parts.append(f"field {self.field!r}")
        prefix = "warning: " if self.severity == "warning" else ""
        return ": ".join(parts) + f": {prefix}{self.message}"


class CaseFileError(Exception):
    """A case file that cannot be used; carries every problem found, not just the first."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True, slots=True)  # slots: every case holds several
class Setup:
    scene: str
    style: str
    camera: str


@dataclass(frozen=True, slots=True)  # slots: every case holds several
class Predicate:
    id: str
    stage: str  # t1..t4 or "all"
    text: str
    tags: tuple[str, ...] = ()  # e.g. "small-text": deciding it means reading the image

    def as_dict(self) -> dict[str, Any]:
        """The predicate as plain data (for the spec and the judge), tags only where it has
        some."""
        return {"id": self.id, "stage": self.stage, "text": self.text,
                **({"tags": list(self.tags)} if self.tags else {})}


@dataclass(frozen=True, slots=True)  # slots: every case holds several
class Forbidden:
    id: str
    text: str


@dataclass(frozen=True)
class Case:
    """One benchmark case: a generation prompt and the process specification behind it."""

    id: str
    domain: str
    subcategory: str
    concept: str
    difficulty: str
    variant: int
    levels: tuple[str, ...]
    applicable: Applicability
    setup: Setup
    entities: Mapping[str, tuple[str, ...]]
    states: Mapping[str, str]
    predicates: tuple[Predicate, ...]
    temporal_constraints: tuple[str, ...]
    forbidden: tuple[Forbidden, ...]
    prompt: str
    source: str = field(default="", compare=False)
    line: int | None = field(default=None, compare=False)

    def spec(self) -> dict[str, Any]:
        """The case as plain data, without where it was loaded from."""
        data = _flat(self)
        del data["source"], data["line"]
        data["levels"] = list(self.levels)
        data["applicable"] = _flat(self.applicable)
        data["applicable"]["declared"] = list(self.applicable.declared)
        data["setup"] = _flat(self.setup)
        data["entities"] = {k: list(v) for k, v in self.entities.items()}
        data["states"] = dict(self.states)
        data["predicates"] = [p.as_dict() for p in self.predicates]
        data["temporal_constraints"] = list(self.temporal_constraints)
        data["forbidden"] = [_flat(f) for f in self.forbidden]
        return data

    @functools.cached_property
    def spec_hash(self) -> str:
        """Changes whenever anything a judge reads from the case changes."""
        return _sha256(json.dumps(self.spec(), sort_keys=True))

    @property
    def prompt_hash(self) -> str:
        return _sha256(self.prompt)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _flat(value: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict, one level deep (``dataclasses.asdict`` deep-copies
    every value; a case's are immutable)."""
    names = _FIELD_NAMES.get(type(value))
    if names is None:
        names = _FIELD_NAMES[type(value)] = tuple(f.name for f in fields(value))
    return {name: getattr(value, name) for name in names}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def field_name(where: Sequence[str | int]) -> str:
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text
