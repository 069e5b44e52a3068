"""``plugin/running.py``: the item hooks of every process, asked through small runs: stored
items replayed, an item error on one line with its rerun command, the state closed."""

from __future__ import annotations

import pytest
from PIL import Image

from pytest_imagetime.plugin.running import ItemRunning
from pytest_imagetime.store.run_lock import CLAIMS
from tests.builders import case_dict, write_case_file
from tests.plugin.session_spy import run_with_spy

ARGS = ("kitchen.yaml", "--imagetime-judge=pixel", "--imagetime-size=128")
NODEID = "kitchen.yaml::kitchen-pour-water-1[procedural]"


@pytest.fixture(autouse=True)
def cases(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [case_dict()])


def _running(pytester: pytest.Pytester, *args: str) -> tuple[pytest.HookRecorder,
                                                              ItemRunning]:
    recorder, spy = run_with_spy(pytester, *args)
    running = spy.plugins["imagetime-running"]
    assert isinstance(running, ItemRunning)
    return recorder, running


def test_a_stored_item_is_replayed_on_the_next_run(pytester: pytest.Pytester) -> None:
    first, running = _running(pytester, *ARGS, "--imagetime-model=procedural")
    first.assertoutcome(passed=1)
    assert len(first.getcalls("pytest_runtest_setup")) == 1
    again, running = _running(pytester, *ARGS, "--imagetime-model=procedural")
    again.assertoutcome(passed=1)
    assert running.state.looked_up == {}  # each looked-up result was handed to its item
    # Replayed: the item's phases are logged without pytest's runtest hooks around them.
    assert again.getcalls("pytest_runtest_setup") == []
    [report] = [r for r in again.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert report.nodeid == NODEID and report.passed


def test_a_run_asked_to_draw_again_does_not_replay(pytester: pytest.Pytester) -> None:
    _running(pytester, *ARGS, "--imagetime-model=procedural")[0].assertoutcome(passed=1)
    again, _ = _running(pytester, *ARGS, "--imagetime-model=procedural",
                              "--imagetime-regenerate")
    again.assertoutcome(passed=1)
    assert len(again.getcalls("pytest_runtest_setup")) == 1


def test_an_item_error_is_one_line_with_its_rerun_command(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml",
                    [case_dict(), case_dict("kitchen-pour-water-2", variant=2)])
    empty = pytester.mkdir("empty")
    Image.new("RGB", (128, 128), (200, 200, 200)).save(empty / "kitchen-pour-water-1.png")
    recorder, _ = _running(pytester, *ARGS, f"--imagetime-model=files:{empty}")
    [report] = [r for r in recorder.getreports("pytest_runtest_logreport")
                if r.when == "setup" and r.failed]
    head, rerun = str(report.longrepr).split("\n")
    assert head.startswith(f"kitchen.yaml::kitchen-pour-water-2[files:{empty}]: ")
    assert "Traceback" not in head
    assert rerun.startswith("  rerun alone: pytest ")
    assert f"--imagetime-model=files:{empty}" in rerun


def test_the_state_is_closed_and_its_folders_released(pytester: pytest.Pytester) -> None:
    recorder, running = _running(pytester, *ARGS, "--imagetime-model=procedural")
    recorder.assertoutcome(passed=1)
    assert running.state.claims.held == []
    assert list(pytester.path.rglob(f"{CLAIMS}/*")) == []
    # The folders are free again: a second session in this process may claim them.
    _running(pytester, *ARGS, "--imagetime-model=procedural")[0].assertoutcome(passed=1)
