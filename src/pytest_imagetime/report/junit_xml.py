"""JUnit XML text from test cases, written directly as text.

Both suites' JUnit files (ImageTime's and TempViz's) come through this one writer; what
differs between them is the content of their cases (``report/junit.py``,
``tempviz/junit.py``). It writes text rather than an ElementTree, since a large run carries
tens of thousands of ``<property>`` elements (docs/performance.md, "The plugin's JUnit
file"). The layout is what ``ElementTree.indent`` gives (two spaces a level).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..store.atomic import atomic_write_text

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


@functools.lru_cache(maxsize=4096)
def _name(key: str) -> str:
    """A property name, escaped once: the same few dozen names repeat on every case."""
    return attribute(key)


def _value(value: object) -> str:
    # Numbers and booleans have nothing to escape.
    return value.translate(_ATTRIBUTE) if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class JunitCase:
    classname: str
    name: str
    seconds: float
    properties: Sequence[tuple[str, Scalar]]
    status: str  # passed, failed, error
    message: str  # the failure's or error's full text
    summary: str  # its one-line message attribute
    output: str = ""  # its system-out: what a CI page shows beside the case


def _attributes(values: Mapping[str, object]) -> str:
    return "".join(f' {k}="{attribute(v)}"' for k, v in values.items())


def _case_lines(case: JunitCase) -> Iterable[str]:
    opening = (f'    <testcase classname="{attribute(case.classname)}" '
               f'name="{attribute(case.name)}" time="{case.seconds:.3f}">')
    yield opening
    if case.properties:
        yield "      <properties>"
        for key, value in case.properties:
            yield f'        <property name="{_name(key)}" value="{_value(value)}" />'
        yield "      </properties>"
    if case.status in ("failed", "error"):
        tag = "failure" if case.status == "failed" else "error"
        yield (f'      <{tag} message="{attribute(case.summary)}">{text(case.message)}'
               f"</{tag}>")
    if case.output:
        yield f"      <system-out>{text(case.output)}</system-out>"
    yield "    </testcase>"


def _property_lines(properties: Sequence[tuple[str, Scalar]], indent: str) -> Iterator[str]:
    yield f"{indent}<properties>\n"
    for key, value in properties:
        yield f'{indent}  <property name="{_name(key)}" value="{_value(value)}" />\n'
    yield f"{indent}</properties>\n"


def junit_chunks(name: str, suites: Mapping[str, Iterable[JunitCase]],
                 counts: Mapping[str, Mapping[str, int]],
                 suite_properties: Mapping[str, Sequence[tuple[str, Scalar]]] | None = None
                 ) -> Iterator[str]:
    """The document piece by piece: ``<testsuites>`` with one ``<testsuite>`` per entry, in
    order; ``counts`` gives each suite's tests, failures and errors (the cases may be made
    lazily, so they are not counted here), ``suite_properties`` its ``<properties>``."""
    total = {key: sum(c[key] for c in counts.values()) for key in ("tests", "failures", "errors")}
    yield "<?xml version='1.0' encoding='utf-8'?>\n"
    yield f"<testsuites{_attributes({'name': name, **total})}>\n"
    for suite, cases in suites.items():
        attributes = {"name": suite, "skipped": 0, **counts[suite]}
        yield f"  <testsuite{_attributes(attributes)}>\n"
        if suite_properties and suite_properties.get(suite):
            yield from _property_lines(suite_properties[suite], "    ")
        for case in cases:
            yield "\n".join(_case_lines(case)) + "\n"
        yield "  </testsuite>\n"
    yield "</testsuites>\n"


def status_counts(statuses: Iterable[str]) -> dict[str, int]:
    counted = list(statuses)
    return {"tests": len(counted), "failures": counted.count("failed"),
            "errors": counted.count("error")}


def junit_text(name: str, suites: Mapping[str, Sequence[JunitCase]]) -> str:
    counts = {suite: status_counts(c.status for c in cases) for suite, cases in suites.items()}
    return "".join(junit_chunks(name, suites, counts))


def write_junit_xml(path: Path, name: str, suites: Mapping[str, Iterable[JunitCase]],
                    counts: Mapping[str, Mapping[str, int]],
                    suite_properties: Mapping[str, Sequence[tuple[str, Scalar]]] | None = None
                    ) -> None:
    atomic_write_text(path, junit_chunks(name, suites, counts, suite_properties))
