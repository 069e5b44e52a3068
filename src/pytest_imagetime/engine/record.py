"""One item's result as it travels from a worker to the controller and into the reports.

It travels as ``report.user_properties``: pytest serialises them across xdist and JUnit XML
writes them. They must stay JSON-like primitives (xdist cannot serialise custom objects), so
a record is flattened into ``imagetime.<field>`` pairs with scalar values and rebuilt on the
controller. Null values are left out, never written as 0.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from ..rubric.facts import ALL_DIMS, C_DIMS, GATE, LEVEL_KEYS

PREFIX = "imagetime."
_EMPTY = "[]"  # one string for every empty list property
TREE_KEYS: tuple[str, ...] = (GATE.key, *LEVEL_KEYS)
Scalar = str | int | float | bool


class _FixedKeys(Mapping[str, Any]):
    """Read-only values of a fixed set of keys, in one tuple: the records the controller
    keeps to the end of the session hold their scores (and tree) this way, in a fraction of
    a dict's memory. Equal to a dict of the same items."""

    __slots__ = ("_values",)
    KEYS: ClassVar[tuple[str, ...]] = ()
    _INDEX: ClassVar[dict[str, int]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._INDEX = {key: i for i, key in enumerate(cls.KEYS)}

    def __init__(self, values: tuple[Any, ...]) -> None:
        if len(values) != len(self.KEYS):
            raise ValueError(f"{type(self).__name__} takes {len(self.KEYS)} values, "
                             f"not {len(values)}")
        self._values = values

    def __getitem__(self, key: str) -> Any:
        return self._values[self._INDEX[key]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.KEYS)

    def __len__(self) -> int:
        return len(self.KEYS)

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            return self._values == other._values
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # as a dict's: the values are not frozen

    def __repr__(self) -> str:
        return repr(dict(self))


class _Scores(_FixedKeys):
    __slots__ = ()
    KEYS = ALL_DIMS


class _Tree(_FixedKeys):
    __slots__ = ()
    KEYS = TREE_KEYS


class _Confidence(_FixedKeys):
    __slots__ = ()
    KEYS = tuple(C_DIMS)


@dataclass(frozen=True, slots=True)  # slots: the controller keeps one a item to the end
class ItemRecord:
    key: str  # "<case id>[<model>]" plus "@<setting>" outside prompt-only
    case_id: str
    case_file: str
    domain: str
    subcategory: str
    concept: str
    difficulty: str
    variant: int
    probed_levels: tuple[str, ...]
    constraint: bool
    model: str
    judge: str
    setting: str
    run_dir: str
    case_sha256: str = ""
    judge_model: str = ""
    status: str = "pending"  # passed, failed, error (set from the test outcome)
    error: str | None = None
    scores: Mapping[str, int | None] = field(default_factory=dict)
    confidence: Mapping[str, float | None] = field(default_factory=dict)  # the judge's, per C
    c_mean: float | None = None
    d_mean: float | None = None
    overall: float | None = None
    tree: Mapping[str, float | None] = field(default_factory=dict)
    gate_pass: bool | None = None
    labels: tuple[str, ...] = ()
    caps: tuple[str, ...] = ()  # every applied cap with its reason and what it lowered
    predicates_failed: tuple[str, ...] = ()
    forbidden_observed: tuple[str, ...] = ()
    predicates_checked: bool = False
    image: str | None = None
    judgment: str | None = None
    cost_usd: float | None = None  # None: unknown (no price for the judge's model)
    generation_cost_usd: float | None = None  # what the image backend reported, if it did
    generation_s: float | None = None
    judge_s: float | None = None
    generated: bool = False  # False when the stored image was reused
    judged: bool = False  # False when the stored judgment was reused
    tokens_in: int = 0  # the judgment's input tokens, and the part read from the prompt cache
    tokens_cached: int = 0
    square: bool | None = None  # whether the judged sheet is square; None: no sheet

    def to_properties(self) -> list[tuple[str, Scalar]]:
        out: list[tuple[str, Scalar]] = []
        append = out.append
        for name, prefixed, kind, digits in _PLAN:
            value = getattr(self, name)
            if kind is _VALUE:
                if value is not None:
                    append(_shared(prefixed, round(value, digits) if type(value) is float
                                   else value))
            elif kind is _TUPLE:
                # JSON, not a joined string: entries may hold commas (cap descriptions).
                append(_shared(prefixed, json.dumps(list(value)) if value else _EMPTY))
            elif kind is _SCORES:
                out.extend(_shared(_NAMES.get(d) or PREFIX + d, v) for d, v in value.items()
                           if v is not None)
            elif kind is _CONF:
                out.extend((_CONF_NAMES[d], round(v, 4)) for d, v in value.items()
                           if v is not None)
            else:
                out.extend(_shared(_NAMES.get(k) or PREFIX + k, round(v, 4))
                           for k, v in value.items() if v is not None)
        return out

    @classmethod
    def from_properties(cls, properties: Iterable[tuple[str, object]]) -> ItemRecord | None:
        """Rebuild a record; None when the properties hold none (a non-ImageTime test).

        One pass over the properties: each name is looked up in a table of what it sets."""
        values: dict[str, Any] = {}
        scores: dict[str, Any] = dict.fromkeys(ALL_DIMS)
        tree: dict[str, Any] = dict.fromkeys(TREE_KEYS)
        confidence: dict[str, Any] = dict.fromkeys(C_DIMS)
        into = {_VALUE: values, _SCORES: scores, _TREE: tree, _CONF: confidence}
        read = _READ.get
        for name, value in properties:
            target = read(name)
            if target is not None:
                kind, key, coerce = target
                into[kind][key] = coerce(value)
        if "key" not in values:
            return None
        return cls(**values, scores=_Scores(tuple(scores.values())),
                   tree=_Tree(tuple(tree.values())),
                   confidence=_Confidence(tuple(confidence.values())))

    def with_status(self, status: str, error: str | None = None) -> ItemRecord:
        return replace(self, status=status, error=error if error is not None else self.error)


# How each field becomes properties and back, worked out once from the declared types:
# records are turned into properties and back once or twice per item.
_VALUE, _TUPLE, _SCORES, _TREE, _CONF = "value", "tuple", "scores", "tree", "confidence"


def _kind(name: str, type_name: str) -> str:
    if name == "scores":
        return _SCORES
    if name == "confidence":
        return _CONF
    if name == "tree":
        return _TREE
    return _TUPLE if type_name.startswith("tuple") else _VALUE


# Floats travel rounded to 4 places; a cost to 8, so that 750 of them add up to the cent.
_DIGITS = {"cost_usd": 8}
_PLAN: tuple[tuple[str, str, str, int], ...] = tuple(
    (f.name, PREFIX + f.name, _kind(f.name, str(f.type)), _DIGITS.get(f.name, 4))
    for f in fields(ItemRecord))
# One string per property name, shared by every item's properties (they stay in memory, on
# the items and their reports, for the whole session).
_NAMES: dict[str, str] = {k: PREFIX + k for k in (*ALL_DIMS, *TREE_KEYS)}
_CONF_NAMES: dict[str, str] = {d: f"{PREFIX}confidence.{d}" for d in C_DIMS}


# Properties stay in memory to the end of the session (pytest keeps every report), and most
# are the same for many items: a score, a mean of a few scores, a flag, the model, the case
# file. Such a pair is one tuple shared by every item's properties; values unique to an item
# (ids, paths, times) are not kept here. Bounded, so that a long session cannot grow it
# without end.
_SHARED_FIELDS = frozenset(
    PREFIX + name for name in (
        "case_file", "domain", "subcategory", "difficulty", "variant", "probed_levels",
        "constraint", "model", "judge", "setting", "run_dir", "judge_model", "status",
        "c_mean", "d_mean", "overall", "gate_pass", "labels", "predicates_checked",
        "cost_usd", "generated", "judged", "square", *ALL_DIMS, *TREE_KEYS))
_SHARED_MAX = 8192
_SHARED: dict[tuple[str, type, Scalar], tuple[str, Scalar]] = {}


def _shared(name: str, value: Scalar) -> tuple[str, Scalar]:
    if name not in _SHARED_FIELDS:
        return name, value
    key = (name, type(value), value)  # typed: True and 1 are equal keys
    pair = _SHARED.get(key)
    if pair is None:
        pair = (name, value)
        if len(_SHARED) < _SHARED_MAX:
            _SHARED[key] = pair
    return pair


def _as_tuple(value: object) -> tuple[str, ...]:
    return _parsed(value if type(value) is str else str(value))


@functools.lru_cache(maxsize=1024)
def _parsed(text: str) -> tuple[str, ...]:
    """One tuple for the records that carry the same list (levels, labels): the controller
    keeps every record to the end of the session."""
    return () if text == _EMPTY else tuple(str(v) for v in json.loads(text))


def _as_bool(value: object) -> bool:
    return value if isinstance(value, bool) else str(value) == "True"


# Values that come as their own type (always, in the same process) are kept as they are;
# others (text, or True where a number belongs) go through str, which refuses what is not one.
def _as_int(value: object) -> int:
    return value if type(value) is int else int(str(value))


def _as_float(value: object) -> float:
    return value if type(value) is float else float(str(value))


def _as_is(value: object) -> object:
    return value


def _coercer(type_name: str) -> Callable[[object], object]:
    if type_name.startswith("tuple"):
        return _as_tuple
    return {"bool": _as_bool, "bool | None": _as_bool, "int": _as_int, "float": _as_float,
            "float | None": _as_float}.get(type_name, _as_is)


# What each property name sets: a field (with its coercer), a score, or a tree value.
_READ: dict[str, tuple[str, str, Callable[[object], object]]] = {
    **{PREFIX + f.name: (_VALUE, f.name, _coercer(str(f.type))) for f in fields(ItemRecord)
       if f.name not in ("scores", "tree", "confidence")},
    **{PREFIX + d: (_SCORES, d, _as_int) for d in ALL_DIMS},
    **{name: (_CONF, d, _as_float) for d, name in _CONF_NAMES.items()},
    **{PREFIX + k: (_TREE, k, _as_float) for k in TREE_KEYS},
}
