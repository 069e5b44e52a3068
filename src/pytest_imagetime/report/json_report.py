"""The aggregate JSON report of one run (one model x one judge x one setting).

Versioned by ``REPORT_FORMAT``; its JSON Schema ships in ``schemas/report.schema.json`` and
every report the tests produce is validated against it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import platform
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import fields
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from .. import __version__
from ..record import ItemRecord
from ..rubric import RUBRIC_VERSION
from ..scoring import Scored, aggregate
from ..store import atomic_write_text

REPORT_FORMAT = "imagetime-report/1"
ITEM_FIELDS = tuple(f.name for f in fields(ItemRecord))
_LIBRARIES = ("pytest", "numpy", "pillow", "jsonschema", "pyyaml", "pytest-xdist", "torch",
              "diffusers", "transformers", "openai")


@functools.cache
def report_schema() -> dict[str, Any]:
    text = resources.files("pytest_imagetime").joinpath("schemas/report.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def validate_report(report: Mapping[str, Any]) -> None:
    """Raise jsonschema.ValidationError when the report does not match its schema."""
    import jsonschema  # here: a run that only collects writes no report

    jsonschema.Draft202012Validator(report_schema()).validate(report)


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
    # Field by field: dataclasses.asdict deep-copies every value, a third of a report's cost.
    data: dict[str, Any] = {}
    for name in ITEM_FIELDS:
        value = getattr(record, name)
        if isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Mapping):
            value = dict(value)
        data[name] = value
    return data


def to_scored(record: ItemRecord) -> Scored:
    return Scored(key=record.key, domain=record.domain, difficulty=record.difficulty,
                  status=record.status, scores=record.scores, labels=record.labels,
                  cost_usd=record.cost_usd)


def case_set(records: Iterable[ItemRecord]) -> dict[str, Any]:
    """How many items and which case texts a run judged: one hash over their spec hashes."""
    hashes = sorted(r.case_sha256 for r in records)
    return {"n": len(hashes),
            "sha256": hashlib.sha256("\n".join(hashes).encode()).hexdigest()}


def build_report(manifest: Mapping[str, Any], records: Iterable[ItemRecord],
                 created: str, previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report of ``records``; ``previous``, the run's last report, lends its intervals
    when they were drawn from the same values (a resumed run then never loads numpy)."""
    from ..gate import INTERVAL_METHOD, confidence_intervals, kept_intervals

    ordered = sorted(records, key=lambda r: r.key)
    items = [item_json(r) for r in ordered]
    env = environment()
    confidence = kept_intervals(previous, items, env["libraries"].get("numpy"))
    return {
        "format": REPORT_FORMAT,
        "created": created,
        "plugin_version": __version__,
        "rubric_version": RUBRIC_VERSION,
        "manifest": {**manifest, "environment": env, "confidence_method": INTERVAL_METHOD},
        "aggregate": aggregate(to_scored(r) for r in ordered),
        # What this session paid: judgments reused from the store cost nothing again.
        "spent_usd": math.fsum(r.cost_usd for r in ordered if r.judged),
        "errors": [{"key": r.key, "case_id": r.case_id, "reason": r.error or ""}
                   for r in ordered if r.status == "error"],
        "confidence": confidence_intervals(items) if confidence is None else confidence,
        "items": items,
    }


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    atomic_write_text(path, report_chunks(report))


def report_chunks(report: Mapping[str, Any]) -> Iterator[str]:
    """The report as indented JSON with each item on one line: as readable and diffable as
    a fully indented file, and written by json's C encoder (indenting runs the pure-Python
    one, which took a quarter of a second for 750 items), one item at a time."""
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
