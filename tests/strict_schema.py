"""The rules OpenAI's strict structured outputs put on a response schema, as a checker.

From the Structured Outputs guide ("Supported schemas"): the root is an object and not
``anyOf``; every object lists all its properties in ``required`` and sets
``additionalProperties: false``; only these keywords are understood (others are refused with
a 400); at most 5000 object properties, 10 levels of nesting, 1000 enum values and 120,000
characters of property names, enum and const values in all.
"""

from __future__ import annotations

from typing import Any

TYPES = frozenset({"string", "number", "boolean", "integer", "object", "array", "null"})
KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "description", "title", "$ref", "$defs", "pattern", "format", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
})
MAX_PROPERTIES, MAX_DEPTH, MAX_ENUM_VALUES, MAX_STRING_LENGTH = 5000, 10, 1000, 120_000


def strict_problems(schema: dict[str, Any]) -> list[str]:
    """Every way ``schema`` breaks the strict-mode rules; empty when it is accepted."""
    problems: list[str] = []
    totals = {"properties": 0, "enum": 0, "chars": 0, "depth": 0}
    if schema.get("type") != "object" or "anyOf" in schema:
        problems.append("the root must be an object, not anyOf")

    def walk(node: Any, where: str, depth: int) -> None:
        if not isinstance(node, dict):
            problems.append(f"{where}: not a schema")
            return
        for key in set(node) - KEYWORDS:
            problems.append(f"{where}: keyword {key!r} is not supported")
        types = node.get("type")
        for t in [types] if isinstance(types, str) else (types or []):
            if t not in TYPES:
                problems.append(f"{where}: type {t!r}")
        if "type" not in node and not {"enum", "const", "anyOf", "$ref"} & set(node):
            problems.append(f"{where}: no type")
        if "enum" in node:
            totals["enum"] += len(node["enum"])
            totals["chars"] += sum(len(str(v)) for v in node["enum"])
        if "properties" in node or types == "object":
            totals["depth"] = max(totals["depth"], depth)
            props = node.get("properties", {})
            totals["properties"] += len(props)
            totals["chars"] += sum(len(k) for k in props)
            if node.get("additionalProperties") is not False:
                problems.append(f"{where}: additionalProperties must be false")
            if sorted(node.get("required", [])) != sorted(props):
                problems.append(f"{where}: every property must be required")
            for name, sub in props.items():
                walk(sub, f"{where}.{name}", depth + 1)
        if "items" in node:
            walk(node["items"], f"{where}[]", depth)
        for i, sub in enumerate(node.get("anyOf", [])):
            walk(sub, f"{where}|{i}", depth)

    walk(schema, "$", 1)
    if totals["properties"] > MAX_PROPERTIES:
        problems.append(f"{totals['properties']} object properties (at most {MAX_PROPERTIES})")
    if totals["depth"] > MAX_DEPTH:
        problems.append(f"{totals['depth']} levels of nesting (at most {MAX_DEPTH})")
    if totals["enum"] > MAX_ENUM_VALUES:
        problems.append(f"{totals['enum']} enum values (at most {MAX_ENUM_VALUES})")
    if totals["chars"] > MAX_STRING_LENGTH:
        problems.append(f"{totals['chars']} characters of names and values "
                        f"(at most {MAX_STRING_LENGTH})")
    return problems
