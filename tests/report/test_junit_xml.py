"""The JUnit text writer: any text survives a round trip through an XML parser, and the
session's file from report items is the one its records give."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_imagetime.engine.record import ItemRecord
from pytest_imagetime.report.json_report import item_json, items_of, record_from_json
from pytest_imagetime.report.junit import write_junit, write_junit_items
from pytest_imagetime.report.junit_xml import (
    JunitCase,
    junit_text,
    status_counts,
    write_junit_xml,
)
from tests.engine.test_record import records as record_strategy

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


@settings(max_examples=40, deadline=None)
@given(st.lists(record_strategy, max_size=12, unique_by=lambda r: r.key))
def test_junit_of_report_items_is_that_of_the_records(tmp_path_factory: pytest.TempPathFactory,
                                                       records: list[ItemRecord]) -> None:
    folder = tmp_path_factory.mktemp("junit")
    messages = {r.key: f"message of {r.key}" for r in records[::2]}
    write_junit(folder / "records.xml", records, messages)
    runs: dict[tuple[str, str, str], list[ItemRecord]] = {}
    for record in records:
        runs.setdefault((record.model, record.setting, record.judge), []).append(record)
    # As the session hands them over: one report's items per run, each in key order.
    items = [items_of(list(members)) for members in runs.values()]
    write_junit_items(folder / "items.xml", items, messages)
    assert (folder / "items.xml").read_text() == (folder / "records.xml").read_text()


@given(st.lists(record_strategy, max_size=12, unique_by=lambda r: r.key))
def test_items_of_empties_the_records_into_key_order(records: list[ItemRecord]) -> None:
    expected = [item_json(r) for r in sorted(records, key=lambda r: r.key)]
    given_records = list(records)
    assert items_of(given_records) == expected
    assert given_records == []
    assert [record_from_json(i) for i in expected] == sorted(records, key=lambda r: r.key)
