"""The rules of the JUnit schema that Jenkins' xUnit plugin validates JUnit files with
(``junit-10.xsd`` in jenkinsci/xunit-plugin), as a checker: which element may hold which,
which attributes each may carry and needs, and the form of a suite's time.

Written from the schema's rules so that tests can hold both JUnit files to them without a
copy of the schema or a validating XML library."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Rule:
    children: frozenset[str]
    attributes: frozenset[str]
    required: frozenset[str] = frozenset()
    text: bool = False  # may hold text


def _rule(children: str, attributes: str, required: str = "", text: bool = False) -> Rule:
    return Rule(frozenset(children.split()), frozenset(attributes.split()),
                frozenset(required.split()), text)


_OUTCOME = _rule("", "type message", text=True)
_RERUN = _rule("stackTrace system-out system-err", "message type", "type", text=True)
_STRING = _rule("", "", text=True)
RULES: dict[str, Rule] = {
    "testsuites": _rule("testsuite", "name time tests failures errors"),
    "testsuite": _rule("testsuite properties testcase system-out system-err",
                       "name tests failures errors group time skipped timestamp hostname id "
                       "package file log url", "name tests failures errors"),
    "properties": _rule("property", ""),
    "property": _rule("", "name value", "name value"),
    "testcase": _rule("skipped error failure rerunFailure rerunError flakyFailure flakyError "
                      "system-out system-err", "name time classname group", "name"),
    "failure": _OUTCOME, "error": _OUTCOME, "skipped": _OUTCOME,
    "rerunFailure": _RERUN, "rerunError": _RERUN, "flakyFailure": _RERUN, "flakyError": _RERUN,
    "system-out": _STRING, "system-err": _STRING, "stackTrace": _STRING,
}
# A suite's time: digits, optionally grouped by commas in threes, and a decimal part.
SUREFIRE_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]*)?")
_TIMED = ("testsuites", "testsuite")


def violations(root: ET.Element) -> list[str]:
    """Every place where the document breaks the schema's rules; empty when it keeps them."""
    found: list[str] = []
    if root.tag not in ("testsuites", "testsuite"):
        found.append(f"root <{root.tag}> is neither <testsuites> nor <testsuite>")

    def visit(element: ET.Element, where: str) -> None:
        rule = RULES.get(element.tag)
        if rule is None:
            found.append(f"{where}: <{element.tag}> is not a JUnit element")
            return
        for name in element.attrib:
            if name not in rule.attributes:
                found.append(f"{where}: attribute {name!r} is not allowed on <{element.tag}>")
        for name in rule.required - set(element.attrib):
            found.append(f"{where}: <{element.tag}> needs the attribute {name!r}")
        if element.tag in _TIMED and "time" in element.attrib \
                and not SUREFIRE_TIME.fullmatch(element.attrib["time"]):
            found.append(f"{where}: time={element.attrib['time']!r} is not a number of seconds")
        if not rule.text and (element.text or "").strip():
            found.append(f"{where}: <{element.tag}> holds text")
        for n, child in enumerate(element):
            place = f"{where}/{child.tag}[{n}]"
            if child.tag not in rule.children:
                found.append(f"{place}: <{child.tag}> is not allowed inside <{element.tag}>")
                continue
            if not rule.text and (child.tail or "").strip():
                found.append(f"{place}: text after <{child.tag}> inside <{element.tag}>")
            visit(child, place)

    visit(root, root.tag)
    return found


def assert_valid_junit(path: Path) -> ET.Element:
    root = ET.parse(path).getroot()
    problems = violations(root)
    assert not problems, f"{path} breaks the JUnit schema:\n" + "\n".join(problems[:20])
    return root
