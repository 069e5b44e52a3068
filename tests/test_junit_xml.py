"""The JUnit text writer: any text survives a round trip through an XML parser."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.report.junit_xml import (
    JunitCase,
    junit_text,
    status_counts,
    write_junit_xml,
)

# What XML 1.0 can hold; the writer replaces the rest with "?".
xml_text = st.text(st.characters(codec="utf-8", exclude_characters="\r"))


def _without_invalid(value: str) -> str:
    return "".join("?" if (ord(c) < 32 and c not in "\t\n") or c in "\ufffe\uffff" else c
                   for c in value)


@given(name=xml_text, key=xml_text, value=xml_text, message=xml_text, summary=xml_text)
def test_any_text_round_trips(name: str, key: str, value: str, message: str,
                              summary: str) -> None:
    case = JunitCase(classname="c.yaml", name=name, seconds=1.5, properties=[(key, value)],
                     status="failed", message=message, summary=summary)
    root = ET.fromstring(junit_text("suite-set", {"suite": [case]}).encode())
    (testcase,) = root.iter("testcase")
    assert testcase.get("name") == _without_invalid(name)
    (prop,) = testcase.iter("property")
    assert (prop.get("name"), prop.get("value")) == (_without_invalid(key),
                                                     _without_invalid(value))
    (failure,) = testcase.iter("failure")
    assert failure.get("message") == _without_invalid(summary)
    assert (failure.text or "") == _without_invalid(message)


def test_counts_statuses_and_layout(tmp_path: Path) -> None:
    cases = [JunitCase("k.yaml", f"case-{status}", 0.25, [("imagetime.C0", 7)], status,
                       f"{status} text" if status != "passed" else "", f"{status} line")
             for status in ("passed", "failed", "error")]
    path = tmp_path / "junit.xml"
    given: dict[str, list[JunitCase]] = {"imagetime[m|pixel]": cases, "empty": []}
    write_junit_xml(path, "imagetime", {k: iter(v) for k, v in given.items()},
                    {k: status_counts(c.status for c in v) for k, v in given.items()})
    assert path.read_text() == junit_text("imagetime", given)
    root = ET.parse(path).getroot()
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["imagetime[m|pixel]", "empty"]
    assert suites[0].get("skipped") == "0" and suites[1].get("tests") == "0"
    by_name = {c.get("name"): c for c in root.iter("testcase")}
    assert by_name["case-passed"].find("failure") is None
    assert by_name["case-passed"].find("error") is None
    assert by_name["case-failed"].find("failure").text == "failed text"  # type: ignore[union-attr]
    assert by_name["case-error"].find("error").get("message") == "error line"  # type: ignore[union-attr]
    assert by_name["case-error"].get("time") == "0.250"
    # Indented as ElementTree.indent would: two spaces a level.
    assert '\n    <testcase classname="k.yaml" name="case-passed"' in path.read_text()
