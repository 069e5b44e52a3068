"""The TempViz JUnit XML: one test suite per run, the answers as properties.

Model or judge errors are ``<error>``, a "no" answer a ``<failure>``, as in the ImageTime
suite's own file, so CI dashboards tell infrastructure problems from model results.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..store import atomic_write_bytes
from .record import TempvizRecord
from .report import sort_key


def build_junit(records: Sequence[TempvizRecord], messages: Mapping[str, str]) -> ET.Element:
    root = ET.Element("testsuites", name="tempviz")
    suites: dict[str, list[TempvizRecord]] = {}
    for record in sorted(records, key=sort_key):
        suites.setdefault(f"tempviz[{record.model}|{record.judge}]", []).append(record)
    total = {"tests": 0, "failures": 0, "errors": 0}
    for name, members in suites.items():
        counts = {"tests": len(members),
                  "failures": sum(r.status == "failed" for r in members),
                  "errors": sum(r.status == "error" for r in members)}
        for key in total:
            total[key] += counts[key]
        attributes = {"name": name, "skipped": "0", **{k: str(v) for k, v in counts.items()}}
        suite = ET.SubElement(root, "testsuite", attributes)
        for record in members:
            seconds = (record.generation_s or 0) + (record.judge_s or 0)
            case = ET.SubElement(suite, "testcase", classname=f"tempviz.{record.category}",
                                 name=f"{record.id}[{record.model}]", time=f"{seconds:.3f}")
            props = ET.SubElement(case, "properties")
            for key, value in record.to_properties():
                ET.SubElement(props, "property", name=key, value=str(value))
            message = messages.get(record.key, record.error or "")
            if record.status == "failed":
                first = message.splitlines()[0] if message else "not every answer is yes"
                ET.SubElement(case, "failure", message=first).text = message
            elif record.status == "error":
                ET.SubElement(case, "error", message=record.error or "error").text = message
    for key, value in total.items():
        root.set(key, str(value))
    return root


def write_junit(path: Path, records: Sequence[TempvizRecord],
                messages: Mapping[str, str]) -> None:
    root = build_junit(records, messages)
    ET.indent(root)
    atomic_write_bytes(path, ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")
