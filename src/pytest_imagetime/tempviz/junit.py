"""The TempViz JUnit XML: one test suite per run, the answers as properties.

Model or judge errors are ``<error>``, a "no" answer a ``<failure>``, as in the ImageTime
suite's own file, so CI dashboards tell infrastructure problems from model results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..report.junit_xml import JunitCase, status_counts, write_junit_xml
from .record import TempvizRecord
from .report import sort_key


def junit_case(record: TempvizRecord, messages: Mapping[str, str]) -> JunitCase:
    message = messages.get(record.key, record.error or "")
    if record.status == "failed":
        summary = message.splitlines()[0] if message else "not every answer is yes"
    else:
        summary = record.error or "error"
    return JunitCase(classname=f"tempviz.{record.category}", name=f"{record.id}[{record.model}]",
                     seconds=(record.generation_s or 0) + (record.judge_s or 0),
                     properties=record.to_properties(), status=record.status,
                     message=message, summary=summary)


def write_junit(path: Path, records: Sequence[TempvizRecord],
                messages: Mapping[str, str]) -> None:
    suites: dict[str, list[TempvizRecord]] = {}
    for record in sorted(records, key=sort_key):
        suites.setdefault(f"tempviz[{record.model}|{record.judge}]", []).append(record)
    write_junit_xml(path, "tempviz",
                    {name: (junit_case(r, messages) for r in members)
                     for name, members in suites.items()},
                    {name: status_counts(r.status for r in members)
                     for name, members in suites.items()})
