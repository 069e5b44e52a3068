"""The case schema (``schemas/cases.schema.json``): the fast yes/no check a valid file
passes, jsonschema's validator for the rest, and its errors worded as located problems.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from ..schema_files import packaged_schema
from .model import CASE_FORMAT, Problem, field_name
from .schemacheck import Check, UnsupportedSchema, compile_check

if TYPE_CHECKING:
    import jsonschema


def _inline_refs(node: Any, root: dict[str, Any]) -> Any:
    """The schema with its local $refs replaced by what they point to: resolving references
    is most of the validation cost, and the case schema has no recursive ones."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target[part]
            rest = {k: _inline_refs(v, root) for k, v in node.items() if k != "$ref"}
            return {**_inline_refs(target, root), **rest}
        return {k: _inline_refs(v, root) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, root) for v in node]
    return node


@functools.cache
def _inlined_schema() -> dict[str, Any]:
    schema: dict[str, Any] = _inline_refs(packaged_schema("cases"), packaged_schema("cases"))
    return schema


@functools.cache
def validator() -> jsonschema.Draft202012Validator:
    # Imported here: a valid file never needs jsonschema (see fast_check).
    import jsonschema

    return jsonschema.Draft202012Validator(_inlined_schema())


@functools.cache
def fast_check() -> Check | None:
    """A yes/no schema check without jsonschema's generic machinery; None if the schema uses
    something it cannot judge exactly. Only a document it rejects goes to jsonschema."""
    try:
        return compile_check(_inlined_schema())
    except UnsupportedSchema:
        return None


def schema_problems(data: Any, shown: str,
                     lines: Callable[[Sequence[str | int]], int | None]) -> Iterator[Problem]:
    if not isinstance(data, dict) or "imagetime" not in data:
        yield Problem(shown, f"not a case file: the first key must be 'imagetime: {CASE_FORMAT}'",
                      line=1)
        return
    errors = sorted(validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    for error in errors:
        where = list(error.absolute_path)
        case_id = None
        if len(where) >= 2 and where[0] == "cases" and isinstance(where[1], int):
            raw = data["cases"][where[1]]
            case_id = raw.get("id") if isinstance(raw, dict) else None
            case_id = case_id or f"#{where[1] + 1}"
            field_path = where[2:]
        else:
            field_path = where
        yield Problem(shown, _schema_message(error), line=lines(where),
                      case_id=str(case_id) if case_id else None,
                      field=field_name(field_path) or None)


def _schema_message(error: jsonschema.ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        return f"{error.message}; allowed fields: {', '.join(allowed)}"
    if error.validator == "enum":
        options = ", ".join(json.dumps(v) for v in schema.get("enum", []))
        return f"{error.instance!r} is not accepted; use one of {options}"
    if error.validator == "pattern" and schema.get("description"):
        return f"{error.instance!r}: {schema['description']}"
    return error.message
