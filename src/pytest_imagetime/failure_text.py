"""Failures that explain themselves, for the collectors and items of both suites."""

from __future__ import annotations

from typing import Any, ClassVar

from _pytest._code.code import ExceptionInfo, TerminalRepr
from _pytest.nodes import Node


class PlainFailures(Node):
    """Shows failures of ``plain_failures`` by their message alone: a bad case file or an
    unmet condition already says what is wrong, and a traceback into this plugin would only
    hide it. Anything else keeps pytest's usual report. Listed before the pytest base."""

    plain_failures: ClassVar[tuple[type[BaseException], ...]] = ()

    def repr_failure(self, excinfo: ExceptionInfo[BaseException],
                     style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, self.plain_failures):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def _repr_failure_py(self, excinfo: ExceptionInfo[BaseException],
                         style: Any = None) -> TerminalRepr:
        # pytest reports a setup error through this method, not repr_failure: building the
        # traceback it would show (every frame's source parsed) cost most of an errored item.
        if isinstance(excinfo.value, self.plain_failures):
            return str(excinfo.value)  # type: ignore[return-value]  # a str is a longrepr too
        return super()._repr_failure_py(excinfo, style)
