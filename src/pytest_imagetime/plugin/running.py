"""The hooks of a benchmark run's items in every pytest process: finished items replayed
without pytest's per-phase hooks, an item error worded on one line, and the backends and the
pipeline closed at the end."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from .collect import CaseItem
from .failure_text import item_error_line
from .replay import item_can_replay, replay
from .state import ImagetimeState


class ItemRunning:
    def __init__(self, state: ImagetimeState) -> None:
        self.state = state

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item,
                                nextitem: pytest.Item | None) -> bool | None:
        """An item whose results are all stored is replayed (``replay.py``): pytest's
        per-phase hooks would cost it more than its lookups. Only until the first item the
        store does not finish: after it, items wait on the pipeline."""
        state = self.state
        if state.planning_done or not state.replays or not isinstance(item, CaseItem) \
                or not item_can_replay(item):
            return None
        try:
            finished = state.pipeline.finished(item.job())
        except Exception:  # the full protocol's setup raises it again and reports it
            return None
        state.looked_up[item.nodeid] = finished
        if finished is None:
            return None
        replay(item, nextitem)
        return True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        line = item_error_line(item, call)
        if line is not None:
            report.longrepr = line
            if isinstance(item, CaseItem):
                report.longrepr += f"\n  rerun alone: {item.rerun_command()}"
        return report

    # First, before the reporter's: the pipeline stops before the reports are written.
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.state.close()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.state.claims.release()
