"""The plugin's own JUnit XML: one test suite per run, scores as properties.

Model or judge errors are ``<error>``, unmet benchmark conditions ``<failure>``, so CI
dashboards tell infrastructure problems from model regressions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..record import ItemRecord
from ..store import with_setting
from .junit_xml import JunitCase, status_counts, write_junit_xml


def _suite_name(record: ItemRecord) -> str:
    return f"imagetime[{with_setting(record.model, record.setting)}|{record.judge}]"


def junit_case(record: ItemRecord, messages: Mapping[str, str]) -> JunitCase:
    message = messages.get(record.key, record.error or "")
    if record.status == "failed":
        summary = message.splitlines()[0] if message else "benchmark conditions not met"
    else:
        summary = record.error or "error"
    return JunitCase(classname=record.case_file.replace("/", "."),
                     name=f"{record.case_id}[{record.model}]",
                     seconds=(record.generation_s or 0) + (record.judge_s or 0),
                     properties=record.to_properties(), status=record.status,
                     message=message, summary=summary)


def write_junit(path: Path, records: Sequence[ItemRecord], messages: Mapping[str, str]) -> None:
    suites: dict[str, list[ItemRecord]] = {}
    for record in sorted(records, key=lambda r: r.key):
        suites.setdefault(_suite_name(record), []).append(record)
    # Cases made as they are written: a run's properties need not all be in memory at once.
    write_junit_xml(path, "imagetime",
                    {name: (junit_case(r, messages) for r in members)
                     for name, members in suites.items()},
                    {name: status_counts(r.status for r in members)
                     for name, members in suites.items()})
