"""What this plugin adds to pytest's own ``--junitxml`` file (both suites).

The file keeps to the JUnit schema Jenkins' xUnit plugin validates with: an item's
properties (``imagetime.*``, ``tempviz.*``) carry its outcome, not the ``pending`` a worker
sends, and stay inside ``<testcase>`` only under ``junit_family=xunit1``, which that schema
does not describe; its results go to its ``<system-out>``, each run's aggregate to the
suite's properties.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pytest

Scalar = str | int | float | bool


def junit_family(config: pytest.Config) -> str:
    try:
        family = str(config.getini("junit_family"))
    except ValueError:  # pytest's junitxml plugin is off (-p no:junitxml)
        return "xunit2"
    return "xunit1" if family == "legacy" else family  # as pytest reads its alias


class PytestJunit:
    def __init__(self, logxml: Any, family: str) -> None:
        self.logxml = logxml
        self.family = family

    def case(self, report: pytest.TestReport, prefix: str,
             properties: Sequence[tuple[str, Scalar]], output: str) -> None:
        """Before pytest's own hook reads the teardown report: the item's properties as
        they end (``properties``), and its ``<system-out>``."""
        import xml.etree.ElementTree as ET

        from _pytest.junitxml import bin_xml_escape

        kept = [(k, v) for k, v in report.user_properties if not k.startswith(prefix)]
        if self.family == "xunit1":
            kept.extend(properties)
        report.user_properties = kept
        element = ET.Element("system-out")
        element.text = bin_xml_escape(output)
        self.logxml.node_reporter(report).append(element)

    def suite_properties(self, pairs: Iterable[tuple[str, Scalar]]) -> None:
        for name, value in pairs:
            self.logxml.add_global_property(name, value)


def pytest_junit_of(config: pytest.Config) -> PytestJunit | None:
    """pytest's own JUnit file of this session, when one is written (on the controller, once
    every plugin is configured)."""
    if hasattr(config, "workerinput"):
        return None
    try:
        from _pytest.junitxml import xml_key
    except ImportError:  # pragma: no cover - every supported pytest has it
        return None
    logxml = config.stash.get(xml_key, None)
    return None if logxml is None else PytestJunit(logxml, junit_family(config))
