"""A fast yes/no check of a document against a small JSON Schema, for the common valid case.

jsonschema's ``iter_errors`` walks every value through its generic keyword machinery, a cost
a large valid case file pays for nothing. ``compile_check`` turns a schema into
plain Python closures that answer one question: is this document certainly valid? It errs one
way only: True means jsonschema (draft 2020-12, no format checking) finds no error; False
means "invalid, or not sure", and the caller then asks jsonschema, which also words the
messages. A schema using a keyword this module does not know is not compiled at all.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Keywords that only annotate: jsonschema validates nothing with them.
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "default",
                          "examples", "deprecated", "readOnly", "writeOnly"})
_OBJECT = frozenset({"properties", "required", "additionalProperties"})
_ARRAY = frozenset({"minItems", "maxItems", "items", "uniqueItems"})
_STRING = frozenset({"minLength", "maxLength", "pattern"})
# Instance types whose equality jsonschema decides as ``==`` on the same type does; anything
# else (1.0 against 1, containers) is left to jsonschema.
_PLAIN = (str, int, bool, type(None))
_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    # jsonschema also takes 1.0 as an integer; floats are left to it.
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


class UnsupportedSchema(Exception):
    """The schema uses something ``compile_check`` cannot promise to judge like jsonschema."""


def compile_check(schema: Any) -> Check:
    """A check for ``schema``; raises UnsupportedSchema rather than guess."""
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, Mapping):
        raise UnsupportedSchema(f"not a schema: {schema!r}")
    keys = set(schema) - _ANNOTATIONS
    unknown = keys - _OBJECT - _ARRAY - _STRING - {"type", "const", "enum"}
    if unknown:
        raise UnsupportedSchema(f"keywords not supported: {', '.join(sorted(unknown))}")
    # Keywords of one instance type apply only to instances of that type; with the type
    # required too, one closure does it all.
    kind = schema.get("type")
    parts: list[Check] = []
    if kind == "object" and keys <= _OBJECT | {"type"}:
        return _object(schema)
    if kind == "array" and keys <= _ARRAY | {"type"}:
        return _array(schema, required=True)
    if kind == "string" and keys <= _STRING | {"type"}:
        return _string(schema, required=True)
    if "type" in schema:
        parts.append(_type(kind))
    if "const" in schema:
        parts.append(_const(schema["const"]))
    if "enum" in schema:
        parts.append(_enum(schema["enum"]))
    if keys & _OBJECT:
        parts.append(_optional(_object(schema), dict))
    if keys & _ARRAY:
        parts.append(_array(schema, required=False))
    if keys & _STRING:
        parts.append(_string(schema, required=False))
    if not parts:
        return _always
    if len(parts) == 1:
        return parts[0]
    return lambda v: all(part(v) for part in parts)


def _always(instance: Any) -> bool:
    return True


def _never(instance: Any) -> bool:
    return False


def _optional(check: Check, kind: type) -> Check:
    return lambda v: not isinstance(v, kind) or check(v)


def _same(a: Any, b: Any) -> bool:
    """jsonschema's ``equal`` where it is plain ``==``; False (not sure) elsewhere."""
    return type(a) is type(b) and isinstance(a, _PLAIN) and a == b


def _type(kind: Any) -> Check:
    names = [kind] if isinstance(kind, str) else kind
    if not isinstance(names, list) or not all(n in _TYPES for n in names):
        raise UnsupportedSchema(f"type {kind!r}")
    tests = tuple(_TYPES[n] for n in names)
    if len(tests) == 1:
        return tests[0]
    return lambda v: any(test(v) for test in tests)


def _const(value: Any) -> Check:
    return lambda v: _same(v, value)


def _enum(options: Any) -> Check:
    if not isinstance(options, list):
        raise UnsupportedSchema(f"enum {options!r}")
    if all(type(option) is str for option in options):
        strings = frozenset(options)
        return lambda v: type(v) is str and v in strings
    return lambda v: any(_same(v, option) for option in options)


def _count(schema: Mapping[str, Any], key: str) -> int | None:
    value = schema.get(key)
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise UnsupportedSchema(f"{key} {value!r}")
    return value


def _object(schema: Mapping[str, Any]) -> Check:
    """type: object with properties, required and additionalProperties."""
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        raise UnsupportedSchema(f"properties {properties!r}")
    subs = {name: compile_check(sub) for name, sub in properties.items()}
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        raise UnsupportedSchema(f"required {required!r}")
    extra = compile_check(schema.get("additionalProperties", True))
    closed = frozenset(subs) if extra is _never else None

    def check(v: Any) -> bool:
        if not isinstance(v, dict):
            return False
        for name in required:
            if name not in v:
                return False
        if closed is not None and not closed.issuperset(v):
            return False
        for key, item in v.items():  # noqa: SIM110 - a loop is faster than all(generator)
            if not subs.get(key, extra)(item):
                return False
        return True

    return check


def _array(schema: Mapping[str, Any], *, required: bool) -> Check:
    """minItems, maxItems, items and uniqueItems, with or without type: array."""
    low = _count(schema, "minItems") or 0
    high = _count(schema, "maxItems")
    sub = compile_check(schema.get("items", True))
    unique = bool(schema.get("uniqueItems", False))  # jsonschema: any true value

    def check(v: Any) -> bool:
        if not isinstance(v, list):
            return not required
        if len(v) < low or (high is not None and len(v) > high):
            return False
        if sub is not _always:
            for item in v:
                if not sub(item):
                    return False
        # Strings compare as themselves; other items are left to jsonschema's uniq.
        return not unique or (all(type(item) is str for item in v) and len(set(v)) == len(v))

    return check


def _string(schema: Mapping[str, Any], *, required: bool) -> Check:
    """minLength, maxLength and pattern, with or without type: string."""
    low = _count(schema, "minLength") or 0
    high = _count(schema, "maxLength")
    pattern = schema.get("pattern")
    if pattern is not None and not isinstance(pattern, str):
        raise UnsupportedSchema(f"pattern {pattern!r}")
    # jsonschema calls re.search(pattern, instance).
    search = None if pattern is None else re.compile(pattern).search

    def check(v: Any) -> bool:
        if not isinstance(v, str):
            return not required
        if len(v) < low or (high is not None and len(v) > high):
            return False
        return search is None or search(v) is not None

    return check
