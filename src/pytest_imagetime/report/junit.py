"""The plugin's own JUnit XML: one test suite per run, scores as properties.

Model or judge errors are ``<error>``, unmet benchmark conditions ``<failure>``, so CI
dashboards tell infrastructure problems from model regressions.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..record import ItemRecord
from ..store import with_setting
from .json_report import record_from_json
from .junit_xml import JunitCase, status_counts, write_junit_xml


def _suite_name(model: str, setting: str, judge: str) -> str:
    return f"imagetime[{with_setting(model, setting)}|{judge}]"


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
        suites.setdefault(_suite_name(record.model, record.setting, record.judge),
                          []).append(record)
    # Cases made as they are written: a run's properties need not all be in memory at once.
    write_junit_xml(path, "imagetime",
                    {name: (junit_case(r, messages) for r in members)
                     for name, members in suites.items()},
                    {name: status_counts(r.status for r in members)
                     for name, members in suites.items()})


def write_junit_items(path: Path, runs: Iterable[Sequence[Mapping[str, Any]]],
                      messages: Mapping[str, str]) -> None:
    """``write_junit`` from the reports' items (each run's in key order, as a report holds
    them), the same text: each record is rebuilt as its case is written, so the session's
    records are never all in memory beside its reports."""
    suites: dict[str, list[Sequence[Mapping[str, Any]]]] = {}
    # In the order of each suite's first key, as write_junit's sort gives them.
    for items in sorted((items for items in runs if items), key=lambda items: items[0]["key"]):
        first = items[0]
        suites.setdefault(_suite_name(first["model"], first["setting"], first["judge"]),
                          []).append(items)

    def cases(runs: list[Sequence[Mapping[str, Any]]]) -> Iterator[JunitCase]:
        for item in heapq.merge(*runs, key=itemgetter("key")):
            yield junit_case(record_from_json(item), messages)

    write_junit_xml(path, "imagetime", {name: cases(runs) for name, runs in suites.items()},
                    {name: status_counts(i["status"] for items in runs for i in items)
                     for name, runs in suites.items()})
