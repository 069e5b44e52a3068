"""The plugin's own JUnit XML: one test suite per run, scores as properties.

Model or judge errors are ``<error>``, unmet benchmark conditions ``<failure>``, so CI
dashboards tell infrastructure problems from model regressions.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..record import ItemRecord
from ..store import atomic_write_bytes, with_setting


def _suite_name(record: ItemRecord) -> str:
    return f"imagetime[{with_setting(record.model, record.setting)}|{record.judge}]"


def build_junit(records: Sequence[ItemRecord], messages: Mapping[str, str]) -> ET.Element:
    root = ET.Element("testsuites", name="imagetime")
    suites: dict[str, list[ItemRecord]] = {}
    for record in sorted(records, key=lambda r: r.key):
        suites.setdefault(_suite_name(record), []).append(record)
    total = {"tests": 0, "failures": 0, "errors": 0}
    for name, members in suites.items():
        counts = {"tests": len(members),
                  "failures": sum(r.status == "failed" for r in members),
                  "errors": sum(r.status == "error" for r in members)}
        for k in total:
            total[k] += counts[k]
        attributes = {"name": name, "skipped": "0", **{k: str(v) for k, v in counts.items()}}
        suite = ET.SubElement(root, "testsuite", attributes)
        for record in members:
            case = ET.SubElement(suite, "testcase", classname=record.case_file.replace("/", "."),
                                 name=f"{record.case_id}[{record.model}]",
                                 time=f"{(record.generation_s or 0) + (record.judge_s or 0):.3f}")
            props = ET.SubElement(case, "properties")
            for key, value in record.to_properties():
                ET.SubElement(props, "property", name=key, value=str(value))
            message = messages.get(record.key, record.error or "")
            if record.status == "failed":
                first = message.splitlines()[0] if message else "benchmark conditions not met"
                ET.SubElement(case, "failure", message=first).text = message
            elif record.status == "error":
                ET.SubElement(case, "error", message=record.error or "error").text = message
    for k, v in total.items():
        root.set(k, str(v))
    return root


def write_junit(path: Path, records: Sequence[ItemRecord], messages: Mapping[str, str]) -> None:
    root = build_junit(records, messages)
    ET.indent(root)
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    atomic_write_bytes(path, data + b"\n")
