"""A plugin that keeps the run's own plugin objects once the session has finished, so that a
test can ask them directly."""

from __future__ import annotations

from typing import Any

import pytest


class SessionSpy:
    def __init__(self) -> None:
        self.plugins: dict[str, Any] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        manager = session.config.pluginmanager
        for name in ("imagetime-reporter", "imagetime-item-errors", "imagetime-running"):
            self.plugins[name] = manager.get_plugin(name)


def run_with_spy(pytester: pytest.Pytester, *args: str) -> tuple[pytest.HookRecorder,
                                                                   SessionSpy]:
    spy = SessionSpy()
    return pytester.inline_run(*args, plugins=[spy]), spy
