"""The TempViz JUnit XML: one test suite per run, the answers in each case's system-out.

Model or judge errors are ``<error>``, a "no" answer a ``<failure>``, as in the ImageTime
suite's own file, so CI dashboards tell infrastructure problems from model results. Like
that file it keeps to the JUnit schema of Jenkins' xUnit plugin: the ``tempviz.*``
properties stay inside ``<testcase>`` only under ``junit_family=xunit1``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ..report.junit import attachment_path
from ..report.junit_xml import JunitCase, status_counts, write_junit_xml
from .record import TempvizRecord
from .report import sort_key


def case_output(record: TempvizRecord, root: Path | None = None) -> str:
    """A case's answers as a person reads them on a CI page, and its image as a GitLab
    attachment (relative to ``root``)."""
    head = f"{record.key}: {record.status}"
    lines = [f"{head}: {record.error}" if record.status == "error" and record.error else head]
    lines.append("answers: " + " ".join(f"{q}={a or '-'}" for q, a in record.answers.items()))
    lines.append(f"prompt: {record.prompt}")
    lines.append(f"judge: {record.judge}")
    if record.image:
        lines.append(f"image: {record.image}")
        lines.append(f"[[ATTACHMENT|{attachment_path(record.image, root)}]]")
    return "\n".join(lines)


def junit_case(record: TempvizRecord, messages: Mapping[str, str],
               case_properties: bool = False, root: Path | None = None) -> JunitCase:
    message = messages.get(record.key, record.error or "")
    if record.status == "failed":
        summary = next((line.strip() for line in message.splitlines() if line.strip()),
                       "not every answer is yes")
    else:
        summary = record.error or "error"
    return JunitCase(classname=f"tempviz.{record.category}", name=f"{record.id}[{record.model}]",
                     seconds=(record.generation_s or 0) + (record.judge_s or 0),
                     properties=record.to_properties() if case_properties else (),
                     status=record.status, message=message, summary=summary,
                     output=case_output(record, root))


def write_junit(path: Path, records: Sequence[TempvizRecord],
                messages: Mapping[str, str], case_properties: bool = False,
                root: Path | None = None) -> None:
    suites: dict[str, list[TempvizRecord]] = {}
    for record in sorted(records, key=sort_key):
        suites.setdefault(f"tempviz[{record.model}|{record.judge}]", []).append(record)
    write_junit_xml(path, "tempviz",
                    {name: (junit_case(r, messages, case_properties, root) for r in members)
                     for name, members in suites.items()},
                    {name: status_counts(r.status for r in members)
                     for name, members in suites.items()})
