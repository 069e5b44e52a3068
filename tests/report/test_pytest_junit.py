"""What the plugin adds to pytest's JUnit file: the family read as pytest reads it, an item's
properties kept or moved by family, its output, and the suite's properties."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest

from pytest_imagetime.report.pytest_junit import PytestJunit, junit_family, pytest_junit_of


@pytest.mark.parametrize(("ini", "family"), [("", "xunit2"), ("junit_family = legacy", "xunit1"),
                                             ("junit_family = xunit1", "xunit1")])
def test_the_family_is_read_as_pytest_reads_it(pytester: pytest.Pytester, ini: str,
                                               family: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    assert junit_family(pytester.parseconfig()) == family


def test_without_pytests_junit_plugin_the_family_is_xunit2(pytester: pytest.Pytester) -> None:
    assert junit_family(pytester.parseconfig("-p", "no:junitxml")) == "xunit2"


def test_only_a_session_writing_junit_on_the_controller_has_one(
        pytester: pytest.Pytester) -> None:
    assert pytest_junit_of(pytester.parseconfigure()) is None
    config = pytester.parseconfigure("--junitxml=out.xml")
    junit = pytest_junit_of(config)
    assert junit is not None and junit.family == "xunit2"
    config.workerinput = {}  # type: ignore[attr-defined]
    assert pytest_junit_of(config) is None


class _LogXml:
    def __init__(self) -> None:
        self.nodes: dict[str, list[ET.Element]] = {}
        self.globals: list[tuple[str, Any]] = []

    def node_reporter(self, report: pytest.TestReport) -> list[ET.Element]:
        return self.nodes.setdefault(report.nodeid, [])

    def add_global_property(self, name: str, value: Any) -> None:
        self.globals.append((name, value))


def _report() -> pytest.TestReport:
    return pytest.TestReport("case.yaml::one", ("case.yaml", 0, "one"), {}, "passed", None,
                             "teardown", user_properties=[("imagetime.status", "pending"),
                                                          ("other", 1)])


@pytest.mark.parametrize(("family", "kept"), [
    ("xunit2", [("other", 1)]),
    ("xunit1", [("other", 1), ("imagetime.status", "passed"), ("imagetime.overall", 7.5)]),
])
def test_an_items_properties_end_as_its_outcome(family: str,
                                                kept: list[tuple[str, Any]]) -> None:
    logxml = _LogXml()
    report = _report()
    PytestJunit(logxml, family).case(report, "imagetime.",
                                     [("imagetime.status", "passed"),
                                      ("imagetime.overall", 7.5)], "Overall 7.50\x00 ok")
    assert report.user_properties == kept
    (element,) = logxml.nodes["case.yaml::one"]
    assert element.tag == "system-out"
    assert element.text == "Overall 7.50#x00 ok"  # escaped as pytest escapes XML text


def test_suite_properties_go_to_the_global_ones() -> None:
    logxml = _LogXml()
    PytestJunit(logxml, "xunit2").suite_properties([("imagetime.n", 3), ("imagetime.ok", True)])
    assert logxml.globals == [("imagetime.n", 3), ("imagetime.ok", True)]
