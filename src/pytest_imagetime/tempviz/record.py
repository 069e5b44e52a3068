"""One TempViz item's result, as it travels from a worker to the controller.

Like the ImageTime record it travels as ``report.user_properties`` (scalars only, so xdist
can carry them and JUnit XML shows them) under the ``tempviz.`` prefix, and is rebuilt on
the controller. Null values are left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

PREFIX = "tempviz."
Scalar = str | int | float | bool


@dataclass(frozen=True)
class TempvizRecord:
    key: str  # "<id>[<model>]"
    id: str  # "<category>-<index>"
    category: str
    index: str
    promptcategory: str
    difficulty: str
    prompt: str
    model: str
    judge: str  # the run directory's judge name: judge model, style, shots
    run_dir: str
    status: str = "pending"  # passed, failed, error (set from the test outcome)
    error: str | None = None
    q1: str | None = None  # yes / no; None when not answered
    q2: str | None = None
    q3: str | None = None
    image: str | None = None
    image_sha256: str | None = None
    judgment: str | None = None
    judge_model: str | None = None
    cost_usd: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    generation_s: float | None = None
    judge_s: float | None = None
    generated: bool = False  # False when the stored image was reused
    judged: bool = False  # False when the stored answers were reused

    @property
    def answers(self) -> dict[str, str | None]:
        return {"q1": self.q1, "q2": self.q2, "q3": self.q3}

    def to_properties(self) -> list[tuple[str, Scalar]]:
        out: list[tuple[str, Scalar]] = []
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float):
                value = round(value, 6)
            if value is not None:
                out.append((PREFIX + f.name, value))
        return out

    @classmethod
    def from_properties(cls, properties: Iterable[tuple[str, object]]
                        ) -> TempvizRecord | None:
        """The record; None when the properties hold none (another kind of test)."""
        raw = {k[len(PREFIX):]: v for k, v in properties if k.startswith(PREFIX)}
        if "key" not in raw:
            return None
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in raw:
                values[f.name] = _coerce(str(f.type), raw[f.name])
        return cls(**values)

    def with_status(self, status: str, error: str | None = None) -> TempvizRecord:
        return dataclasses.replace(self, status=status,
                                   error=error if error is not None else self.error)


def _coerce(type_name: str, value: object) -> object:
    if type_name == "bool":
        return value if isinstance(value, bool) else str(value) == "True"
    if type_name == "int":
        return int(str(value))
    if type_name in ("float", "float | None"):
        return float(str(value))
    return str(value)
