"""Failures that explain themselves, for the collectors and items of both suites."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from _pytest._code.code import ExceptionInfo, TerminalRepr
from _pytest.nodes import Node

from ..engine.item_error import ItemError


class PlainFailures(Node):
    """Shows failures of ``plain_failures`` by their message alone: a bad case file or an
    unmet condition already says what is wrong, and a traceback into this plugin would only
    hide it. Anything else keeps pytest's usual report. Listed before the pytest base."""

    plain_failures: ClassVar[tuple[type[BaseException], ...]] = ()

    def _repr_failure_py(self, excinfo: ExceptionInfo[BaseException],  # type: ignore[override]
                         style: Any = None) -> str | TerminalRepr:
        # pytest words a setup error here, not in repr_failure: a traceback it would format
        # (parsing every source file on the way) and then not show.
        if isinstance(excinfo.value, self.plain_failures):
            return str(excinfo.value)
        return super()._repr_failure_py(excinfo, style)


def report_text(report: Any) -> str:
    """A report's failure text as pytest's ``longreprtext`` gives it, without the
    ``[gw1] linux -- Python ...`` line that a report from an xdist worker starts with: the
    text and its first line read the same under ``-n N`` as serially."""
    from io import StringIO

    from _pytest._io import TerminalWriter

    longrepr = report.longrepr
    if longrepr is None:
        return ""
    if not hasattr(longrepr, "toterminal"):
        return str(longrepr).strip()
    buffer = StringIO()
    writer = TerminalWriter(buffer)
    writer.hasmarkup = False
    longrepr.toterminal(writer)
    return buffer.getvalue().strip()


def last_line(text: str) -> str:
    """The last line of a failure text that says something: its reason, after a traceback."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def item_error_line(item: pytest.Item, call: pytest.CallInfo[None]) -> str | None:
    """An item's setup ItemError on one line, as both suites report it; None otherwise."""
    if call.when == "setup" and call.excinfo is not None \
            and call.excinfo.errisinstance(ItemError):
        return f"{item.nodeid}: {call.excinfo.value}"
    return None


def setup_error_reason(error: str | None, text: str) -> str:
    """Why an item's setup failed: its record's error, else its failure text's last line."""
    return error or last_line(text) or "setup failed"
