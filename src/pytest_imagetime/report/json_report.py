"""The aggregate JSON report of one run (one model x one judge x one setting).

Versioned by ``REPORT_FORMAT``; its JSON Schema ships in ``schemas/report.schema.json`` and
every report the tests produce is validated against it.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import fields
from importlib import metadata
from pathlib import Path
from typing import Any

from .. import __version__
from ..backends.prices import sum_costs
from ..engine.record import ItemRecord
from ..rubric.facts import RUBRIC_VERSION
from ..schema_files import validate_against
from ..scoring.aggregate import Scored, aggregate
from ..scoring.intervals import INTERVAL_METHOD, confidence_intervals, kept_intervals
from ..store.atomic import atomic_write_text

REPORT_FORMAT = "imagetime-report/1"
ITEM_FIELDS = tuple(f.name for f in fields(ItemRecord))
_LIBRARIES = ("pytest", "numpy", "pillow", "jsonschema", "pyyaml", "pytest-xdist", "torch",
              "diffusers", "transformers", "openai")


def validate_report(report: Mapping[str, Any]) -> None:
    """Raise jsonschema.ValidationError when the report does not match its schema."""
    validate_against("report", report)


def library_versions() -> dict[str, str]:
    versions = {}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def environment() -> dict[str, Any]:
    return {"python": sys.version.split()[0], "platform": platform.platform(),
            "libraries": library_versions(), "gpu": gpu_description()}


def gpu_description() -> str | None:
    """The GPU a torch-based backend ran on, without importing torch for runs that do not."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_available():
            return ", ".join(cuda.get_device_name(i) for i in range(cuda.device_count()))
    except Exception:  # a broken driver must not break the report
        return None
    return None


def item_json(record: ItemRecord) -> dict[str, Any]:
    # Field by field: dataclasses.asdict deep-copies every value, which serialising never needs.
    data: dict[str, Any] = {}
    for name in ITEM_FIELDS:
        value = getattr(record, name)
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        data[name] = value
    return data


def record_from_json(item: Mapping[str, Any]) -> ItemRecord:
    """The record a report item was made from (its lists become tuples again)."""
    values: dict[str, Any] = {}
    for name in ITEM_FIELDS:
        if name not in item:  # a report older than the field: its default
            continue
        value = item.get(name)
        values[name] = tuple(value) if isinstance(value, list) else value
    if values.get("confidence", {}) is None:  # written before confidences were kept
        values["confidence"] = {}
    return ItemRecord(**values)


def items_of(records: list[ItemRecord]) -> list[dict[str, Any]]:
    """The report items of ``records``, in key order. Empties ``records`` as it goes: each
    record's memory is reused by its item, where a run's records and items would otherwise
    be in memory together at the session's end, its peak."""
    records.sort(key=_key, reverse=True)
    items = []
    while records:
        items.append(item_json(records.pop()))
    return items


def _key(record: ItemRecord) -> str:
    return record.key


def _scored(item: Mapping[str, Any]) -> Scored:
    return Scored(key=item["key"], domain=item["domain"], difficulty=item["difficulty"],
                  status=item["status"], scores=item["scores"], labels=tuple(item["labels"]),
                  cost_usd=item["cost_usd"], confidence=item.get("confidence") or {},
                  generation_cost_usd=item.get("generation_cost_usd"))


def prompt_cache(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Input tokens of the items' judgments, the part the provider read from its prompt cache
    (billed at the cached rate), and that share."""
    tokens_in = sum(int(i.get("tokens_in") or 0) for i in items)
    cached = sum(int(i.get("tokens_cached") or 0) for i in items)
    return {"tokens_in": tokens_in, "tokens_cached": cached,
            "hit_rate": cached / tokens_in if tokens_in else None}


def spent(items: Iterable[Mapping[str, Any]]) -> float | None:
    """What this session paid (judgments reused from the store cost nothing again); None
    when an item judged now has an unknown cost."""
    return sum_costs(i["cost_usd"] for i in items if i["judged"])


def case_set(records: Iterable[ItemRecord]) -> dict[str, Any]:
    """How many items and which case texts a run judged: one hash over their spec hashes."""
    return _case_set(r.case_sha256 for r in records)


def case_set_of_items(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """``case_set`` of a report's items."""
    return _case_set(str(i["case_sha256"]) for i in items)


def _case_set(case_hashes: Iterable[str]) -> dict[str, Any]:
    hashes = sorted(case_hashes)
    return {"n": len(hashes),
            "sha256": hashlib.sha256("\n".join(hashes).encode()).hexdigest()}


def build_report(manifest: Mapping[str, Any], records: Iterable[ItemRecord],
                 created: str, previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report of ``records``; ``previous``, the run's last report, lends its intervals
    when they were drawn from the same values (a resumed run then never loads numpy)."""
    return report_of_items(manifest, items_of(list(records)), created, previous)


def report_of_items(manifest: Mapping[str, Any], items: list[dict[str, Any]], created: str,
                    previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``build_report`` from the records' items (``items_of``), which become its items."""
    env = environment()
    confidence = kept_intervals(previous, items, env["libraries"].get("numpy"))
    return {
        "format": REPORT_FORMAT,
        "created": created,
        "plugin_version": __version__,
        "rubric_version": RUBRIC_VERSION,
        "manifest": {**manifest, "environment": env, "confidence_method": INTERVAL_METHOD},
        "aggregate": aggregate(_scored(i) for i in items),
        "spent_usd": spent(items),
        "prompt_cache": prompt_cache(items),
        "errors": [{"key": i["key"], "case_id": i["case_id"], "reason": i["error"] or ""}
                   for i in items if i["status"] == "error"],
        "confidence": confidence_intervals(items) if confidence is None else confidence,
        "items": items,
    }


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    atomic_write_text(path, report_chunks(report))


def report_chunks(report: Mapping[str, Any]) -> Iterator[str]:
    """The report as indented JSON with each item on one line: as readable and diffable as
    a fully indented file, and written by json's C encoder (indenting runs the pure-Python
    one), one item at a time."""
    items = report.get("items")
    if not isinstance(items, list):
        yield json.dumps(report, indent=1, sort_keys=True) + "\n"
        return
    placeholder = "\x00items\x00"
    head = json.dumps({**report, "items": placeholder}, indent=1, sort_keys=True)
    before, _, after = head.partition(json.dumps(placeholder))
    yield before
    if not items:
        yield "[]"
    for index, item in enumerate(items):
        start = "[\n  " if index == 0 else ",\n  "
        yield start + json.dumps(item, sort_keys=True, separators=(", ", ": "))
    if items:
        yield "\n ]"
    yield after + "\n"
