"""Judgments on disk: one JSON record per case in the run directory, reused while its input
key is unchanged."""

from __future__ import annotations

from .atomic import atomic_write_json, read_json
from .keys import JSON
from .paths import RunPaths


def load_stored_judgment(paths: RunPaths, case_id: str, key: str) -> dict[str, JSON] | None:
    record = read_json(paths.judgment(case_id))
    if not isinstance(record, dict) or record.get("input_key") != key:
        return None
    return record


def store_judgment(paths: RunPaths, case_id: str, record: dict[str, JSON]) -> None:
    atomic_write_json(paths.judgment(case_id), record)
