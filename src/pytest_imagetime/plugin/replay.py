"""Replaying an item whose results are all stored, without pytest's per-phase hooks.

A finished item's setup is two lookups and its call a few comparisons, yet pytest's own
protocol wraps each of its three phases in hooks that start and stop output capture, log
capture and the other plugins' ``pytest_runtest_setup/call/teardown``, which cost more
than the lookups. A replay runs the item's
setup, call and teardown in order through pytest's own setup state (collectors are set up
and torn down as under the full protocol) and sends every report through the usual
``pytest_runtest_makereport`` and ``pytest_runtest_logreport`` hooks, so the terminal,
JUnit XML, xdist, ``--maxfail`` and this plugin's own reports see exactly what a full
protocol would give them.

Items that need more than that take pytest's protocol: items with skip or xfail markers
(pytest evaluates those in its setup hook), and sessions with ``--setup-show``,
``--setup-only`` or ``--setup-plan``, or pytest internals this module does not know.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

# Marks that pytest's own skipping plugin acts on in the phases a replay leaves out.
_PROTOCOL_MARKS = frozenset({"skip", "skipif", "xfail"})
_PROTOCOL_OPTIONS = ("setupshow", "setuponly", "setupplan")


def session_can_replay(config: pytest.Config) -> bool:
    """Whether this session's options leave the per-phase hooks nothing to show."""
    return not any(config.getoption(name, False) for name in _PROTOCOL_OPTIONS)


def item_can_replay(item: pytest.Item) -> bool:
    """Whether the item can skip the per-phase hooks: no marks that act in them, and the
    pytest internals a replay uses are there."""
    if getattr(item.session, "_setupstate", None) is None:
        return False
    return not any(mark.name in _PROTOCOL_MARKS for mark in item.iter_markers())


def replay(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Run the item's phases as pytest's protocol does, minus the per-phase hooks."""
    ihook = item.ihook  # looked up once: each lookup walks the item's conftest files
    state: Any = item.session._setupstate  # private: item_can_replay checks it is there
    # What pytest lets through instead of reporting it, as its own protocol does.
    reraise: tuple[type[BaseException], ...] = (pytest.exit.Exception,)
    if not item.config.getoption("usepdb", False):
        reraise += (KeyboardInterrupt,)

    def phase(when: Any, run: Callable[[], object]) -> pytest.TestReport:
        call = pytest.CallInfo.from_call(run, when=when, reraise=reraise)
        report: pytest.TestReport = ihook.pytest_runtest_makereport(item=item, call=call)
        ihook.pytest_runtest_logreport(report=report)
        if call.excinfo is not None and report.failed \
                and not call.excinfo.errisinstance(pytest.skip.Exception):
            ihook.pytest_exception_interact(node=item, call=call, report=report)
        return report

    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    if phase("setup", lambda: state.setup(item)).passed:
        phase("call", item.runtest)
    if item.session.shouldfail or item.session.shouldstop:
        nextitem = None  # as pytest does: tear everything down to report its errors
    phase("teardown", lambda: state.teardown_exact(nextitem))
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
