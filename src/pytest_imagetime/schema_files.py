"""The JSON schemas shipped in ``schemas/``: each read once, and a document checked against
one of them."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any


@functools.cache
def packaged_schema(name: str) -> dict[str, Any]:
    """``schemas/<name>.schema.json``, parsed."""
    text = resources.files("pytest_imagetime").joinpath(f"schemas/{name}.schema.json").read_text(
        encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate_against(name: str, document: Mapping[str, Any]) -> None:
    """Raise jsonschema.ValidationError when ``document`` does not match schema ``name``."""
    import jsonschema  # here: a run that only collects checks no document

    jsonschema.Draft202012Validator(packaged_schema(name)).validate(document)
