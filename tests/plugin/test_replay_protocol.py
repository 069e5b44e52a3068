"""Replaying an item without the per-phase hooks gives the reports pytest's protocol gives."""

from __future__ import annotations

import re

import pytest

from pytest_imagetime.plugin.replay import item_can_replay, session_can_replay

REPLAYING = """
import pytest

from pytest_imagetime.plugin.replay import item_can_replay, session_can_replay
from pytest_imagetime.plugin.replay import item_can_replay, replay, session_can_replay

REPLAYED = []

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if not (session_can_replay(item.config) and item_can_replay(item)):
        return None
    REPLAYED.append(item.name)
    replay(item, nextitem)
    return True

def pytest_sessionfinish(session):
    import sys
    events = getattr(sys.modules.get("test_items"), "EVENTS", [])
    print("REPLAYED=" + ",".join(REPLAYED) + " EVENTS=" + ",".join(events))
"""

TESTS = """
import pytest

from pytest_imagetime.plugin.replay import item_can_replay, session_can_replay

EVENTS = []

@pytest.fixture(scope="module")
def resource():
    EVENTS.append("up")
    yield
    EVENTS.append("down")

@pytest.fixture
def broken():
    raise RuntimeError("setup broke")

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown broke")

def test_passes(resource):
    assert EVENTS == ["up"]

def test_fails(resource):
    assert 1 == 2

def test_setup_error(broken):
    pass

def test_teardown_error(bad_teardown):
    pass

def test_skips_inside():
    pytest.skip("not today")

@pytest.mark.skip(reason="marked")
def test_marked_skip():
    pass

@pytest.mark.xfail(reason="known", strict=True)
def test_marked_xfail():
    assert False

def test_last(resource):
    assert EVENTS == ["up"]  # set up once for the module, not once an item
"""


def _replayed(result: pytest.RunResult) -> list[str]:
    (listed,) = re.findall(r"REPLAYED=(\S*)", result.stdout.str())
    return [name for name in listed.split(",") if name]


def test_replayed_items_report_what_the_full_protocol_reports(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_items=TESTS)
    plain = pytester.runpytest("--junitxml=plain.xml")
    pytester.makeconftest(REPLAYING)
    replayed = pytester.runpytest("-s", "--junitxml=replayed.xml")
    expected = {"passed": 3, "failed": 1, "errors": 2, "skipped": 2, "xfailed": 1}
    plain.assert_outcomes(**expected)
    replayed.assert_outcomes(**expected)
    assert _replayed(replayed) == ["test_passes", "test_fails", "test_setup_error",
                                   "test_teardown_error", "test_skips_inside", "test_last"]
    assert "setup broke" in replayed.stdout.str() and "teardown broke" in replayed.stdout.str()
    assert "EVENTS=up,down" in replayed.stdout.str()  # the module fixture was torn down
    assert "test_passes" in (pytester.path / "replayed.xml").read_text()


def test_setup_options_take_the_full_protocol(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_items="def test_one(): pass\n")
    pytester.makeconftest(REPLAYING)
    result = pytester.runpytest("-s", "--setup-show")
    result.assert_outcomes(passed=1)
    assert _replayed(result) == []


def test_maxfail_stops_a_replayed_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_items="def test_a(): assert 0\ndef test_b(): assert 0\n")
    pytester.makeconftest(REPLAYING)
    result = pytester.runpytest("-s", "--maxfail=1")
    result.assert_outcomes(failed=1)
    assert _replayed(result) == ["test_a"]


def test_marks_that_act_in_the_phases_take_the_protocol(pytester: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    items = pytester.getitems("""
        import pytest

        def test_plain(): pass

        @pytest.mark.skip
        def test_skip(): pass

        @pytest.mark.skipif(True, reason="x")
        def test_skipif(): pass

        @pytest.mark.xfail
        def test_xfail(): pass

        @pytest.mark.parametrize("n", [1])
        def test_param(n): pass
    """)
    monkeypatch.setattr(items[0].session, "_setupstate", object(), raising=False)
    assert {item.name: item_can_replay(item) for item in items} == {
        "test_plain": True, "test_skip": False, "test_skipif": False, "test_xfail": False,
        "test_param[1]": True}


def test_without_pytests_setup_state_nothing_replays(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    item = pytester.getitem("def test_func(): pass")
    monkeypatch.setattr(item.session, "_setupstate", None, raising=False)
    assert not item_can_replay(item)


@pytest.mark.parametrize(("options", "can"), [((), True), (("--setup-show",), False),
                                              (("--setup-only",), False),
                                              (("--setup-plan",), False)])
def test_setup_options_rule_out_a_replay(pytester: pytest.Pytester, options: tuple[str, ...],
                                         can: bool) -> None:
    assert session_can_replay(pytester.parseconfig(*options)) is can
