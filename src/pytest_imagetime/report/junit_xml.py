"""JUnit XML text from test cases, written directly as text.

Both suites' JUnit files (ImageTime's and TempViz's) come through here. A run of 750 items
carries some 35,000 ``<property>`` elements; building and serialising an ElementTree for them
took most of a second, the text below takes a few hundredths. The layout is what
``ElementTree.indent`` gives (two spaces a level), so files read and diff as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..store import atomic_write_bytes

Scalar = str | int | float | bool

# One translation table per context: escapes, and "?" for what XML 1.0 cannot hold at all
# (a judge's raw text may contain control characters).
_INVALID = {c: "?" for c in (*range(0x20), 0xFFFE, 0xFFFF) if chr(c) not in "\t\n\r"}
_TEXT = str.maketrans({**_INVALID, "&": "&amp;", "<": "&lt;", ">": "&gt;"})
_ATTRIBUTE = str.maketrans({**_INVALID, "&": "&amp;", "<": "&lt;", ">": "&gt;",
                            '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#09;"})


def text(value: object) -> str:
    return str(value).translate(_TEXT)


def attribute(value: object) -> str:
    return str(value).translate(_ATTRIBUTE)


@dataclass(frozen=True)
class JunitCase:
    classname: str
    name: str
    seconds: float
    properties: Sequence[tuple[str, Scalar]]
    status: str  # passed, failed, error
    message: str  # the failure's or error's full text
    summary: str  # its one-line message attribute


def _attributes(values: Mapping[str, object]) -> str:
    return "".join(f' {k}="{attribute(v)}"' for k, v in values.items())


def _case_lines(case: JunitCase) -> Iterable[str]:
    opening = (f'    <testcase classname="{attribute(case.classname)}" '
               f'name="{attribute(case.name)}" time="{case.seconds:.3f}">')
    yield opening
    if case.properties:
        yield "      <properties>"
        for key, value in case.properties:
            yield f'        <property name="{attribute(key)}" value="{attribute(value)}" />'
        yield "      </properties>"
    if case.status in ("failed", "error"):
        tag = "failure" if case.status == "failed" else "error"
        yield (f'      <{tag} message="{attribute(case.summary)}">{text(case.message)}'
               f"</{tag}>")
    yield "    </testcase>"


def junit_text(name: str, suites: Mapping[str, Sequence[JunitCase]]) -> str:
    """The document: ``<testsuites>`` with one ``<testsuite>`` per entry, in order."""
    lines: list[str] = []
    total = {"tests": 0, "failures": 0, "errors": 0}
    for suite, cases in suites.items():
        counts = {"tests": len(cases),
                  "failures": sum(c.status == "failed" for c in cases),
                  "errors": sum(c.status == "error" for c in cases)}
        for key in total:
            total[key] += counts[key]
        lines.append(f"  <testsuite{_attributes({'name': suite, 'skipped': 0, **counts})}>")
        for case in cases:
            lines.extend(_case_lines(case))
        lines.append("  </testsuite>")
    head = ["<?xml version='1.0' encoding='utf-8'?>",
            f"<testsuites{_attributes({'name': name, **total})}>"]
    return "\n".join([*head, *lines, "</testsuites>", ""])


def write_junit_xml(path: Path, name: str, suites: Mapping[str, Sequence[JunitCase]]) -> None:
    atomic_write_bytes(path, junit_text(name, suites).encode("utf-8"))
