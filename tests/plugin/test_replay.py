"""Finished items replayed without pytest's per-phase hooks: what every reader of the
reports sees is what the full protocol gives, and items that need the full protocol get it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, write_case_file

SMALL = "--imagetime-size=96"
# Counts the items that went through pytest's per-phase hooks, in any process.
PHASE_COUNTER = """
import os

def pytest_runtest_setup(item):
    with open(os.path.join(str(item.config.rootpath), "full-protocol.txt"), "a") as out:
        out.write(item.nodeid + "\\n")
"""


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """After pytester, which clears PYTEST_ADDOPTS."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")


def _files(pytester: pytest.Pytester) -> list[str]:
    """Three case files, so that replayed and drawn items meet across files."""
    for name in ("constraints.yaml", "kitchen.yaml", "pets.yaml"):
        shutil.copy(builtin_cases_dir() / name, pytester.path / name)
    return ["constraints.yaml", "kitchen.yaml", "pets.yaml"]


def _full_protocol(pytester: pytest.Pytester) -> list[str]:
    """The items that went through the full protocol since the last call."""
    path = pytester.path / "full-protocol.txt"
    if not path.exists():
        return []
    found = path.read_text().split()
    path.unlink()
    return found


def _report(pytester: pytest.Pytester, out: str = "reports") -> dict[str, Any]:
    report: dict[str, Any] = json.loads(
        (pytester.path / out / "procedural" / "pixel" / "report.json").read_text())
    validate_report(report)
    return report


def _junit(path: Path) -> str:
    """pytest's own JUnit XML less what differs from run to run (times, host, date)."""
    text = path.read_text()
    return re.sub(r' (time|timestamp|hostname)="[^"]*"', "", text)


def test_a_finished_run_is_replayed_with_the_reports_of_the_full_protocol(
        pytester: pytest.Pytester) -> None:
    files = _files(pytester)
    pytester.makeconftest(PHASE_COUNTER)
    args = [*files, "--imagetime-model=procedural", SMALL, "-rA"]
    first = pytester.runpytest(*args)
    outcomes = first.parseoutcomes()
    assert outcomes["passed"] > 60
    assert len(_full_protocol(pytester)) == outcomes["passed"]
    # A resume through the full protocol (--setup-show asks for it), then a replayed one.
    full = pytester.runpytest(*args, "--setup-show", "--junitxml=full.xml")
    assert len(_full_protocol(pytester)) == outcomes["passed"]
    before = _report(pytester)
    again = pytester.runpytest(*args, "--junitxml=replayed.xml")
    assert again.parseoutcomes() == full.parseoutcomes() == outcomes
    assert _full_protocol(pytester) == []  # every item replayed
    after = _report(pytester)
    assert not any(i["generated"] or i["judged"] for i in after["items"])
    assert after["items"] == before["items"]
    assert after["aggregate"] == before["aggregate"]
    assert after["confidence"] == before["confidence"]
    # Everything the JUnit XML of pytest itself holds, properties included.
    assert _junit(pytester.path / "replayed.xml") == _junit(pytester.path / "full.xml")
    passed = [line for line in again.outlines if line.startswith("PASSED ")]
    assert len(passed) == outcomes["passed"]


def test_replayed_and_drawn_items_meet_across_files(pytester: pytest.Pytester) -> None:
    files = _files(pytester)
    pytester.makeconftest(PHASE_COUNTER)
    args = [*files, "--imagetime-model=procedural", SMALL]
    # The first and last files are finished, the middle one is not.
    assert pytester.runpytest(*args, "--deselect", "kitchen.yaml").ret == 0
    _full_protocol(pytester)
    result = pytester.runpytest(*args)
    assert result.ret == 0
    drawn = _full_protocol(pytester)
    assert drawn and all(n.startswith(("kitchen.yaml::", "pets.yaml::")) for n in drawn)
    assert drawn[0].startswith("kitchen.yaml::")  # from the first item to draw on
    items = _report(pytester)["items"]
    assert len(items) == result.parseoutcomes()["passed"]
    redone = {i["case_file"] for i in items if i["generated"]}
    assert redone == {"kitchen.yaml"}


def test_failures_replay_with_their_message_and_stop_a_maxfail_run(
        pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [
        case_dict("kitchen-pour-water-1"), case_dict("kitchen-pour-water-2", variant=2),
        case_dict("kitchen-pour-water-3", variant=2)])
    pytester.makeconftest(PHASE_COUNTER + """
def pytest_imagetime_item_conditions(case, outcome, config):
    if case.variant == 2:
        return [f"team rule: variant 2 needs C0 above 10 (got {outcome.record.scores['C0']})"]
    return None
""")
    args = ["kitchen.yaml", "--imagetime-model=procedural", SMALL]
    first = pytester.runpytest(*args)
    first.assert_outcomes(passed=1, failed=2)
    _full_protocol(pytester)
    again = pytester.runpytest(*args)
    again.assert_outcomes(passed=1, failed=2)
    assert _full_protocol(pytester) == []
    again.stdout.fnmatch_lines(["*team rule: variant 2 needs C0 above 10 (got *)"])
    statuses = {i["case_id"]: i["status"] for i in _report(pytester)["items"]}
    assert statuses == {"kitchen-pour-water-1": "passed", "kitchen-pour-water-2": "failed",
                        "kitchen-pour-water-3": "failed"}
    stopped = pytester.runpytest(*args, "--maxfail=1")
    stopped.assert_outcomes(passed=1, failed=1)


def test_items_that_need_the_full_protocol_get_it(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [
        case_dict("kitchen-pour-water-1"), case_dict("kitchen-pour-water-2", variant=2)])
    args = ["kitchen.yaml", "--imagetime-model=procedural", SMALL]
    pytester.runpytest(*args).assert_outcomes(passed=2)
    # Marks that pytest's skipping plugin acts on in its setup hook.
    pytester.makeconftest(PHASE_COUNTER + """
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if item.name.startswith("kitchen-pour-water-2"):
            item.add_marker(pytest.mark.xfail(reason="known", strict=True))
""")
    marked = pytester.runpytest(*args, "-rX")
    marked.assert_outcomes(passed=1, failed=1)  # strict xfail that passed: XPASS(strict)
    assert [n.split("::")[1] for n in _full_protocol(pytester)] == [
        "kitchen-pour-water-2[procedural]"]
    pytester.makeconftest(PHASE_COUNTER)
    shown = pytester.runpytest(*args, "--setup-show")
    shown.assert_outcomes(passed=2)
    assert len(_full_protocol(pytester)) == 2
    shown.stdout.fnmatch_lines(["*kitchen.yaml::kitchen-pour-water-1?procedural?*"])


def test_a_resume_under_xdist_replays_on_the_workers(pytester: pytest.Pytester) -> None:
    files = _files(pytester)
    pytester.makeconftest(PHASE_COUNTER)
    args = [*files, "--imagetime-model=procedural", SMALL, "-n", "2"]
    first = pytester.runpytest(*args)
    outcomes = first.parseoutcomes()
    assert len(_full_protocol(pytester)) == outcomes["passed"]
    before = _report(pytester)
    again = pytester.runpytest(*args)
    assert again.parseoutcomes() == outcomes
    assert _full_protocol(pytester) == []
    after = _report(pytester)
    assert after["aggregate"] == before["aggregate"]
    assert not any(i["generated"] or i["judged"] for i in after["items"])


def test_a_resume_with_unchanged_scores_loads_no_numpy(pytester: pytest.Pytester) -> None:
    """Its report takes the last report's intervals (drawn from the same values) and no sheet
    is drawn or measured: nothing in the run needs numpy. In a process of its own, since
    this one has numpy loaded."""
    write_case_file(pytester.path / "kitchen.yaml", [
        case_dict("kitchen-pour-water-1"), case_dict("kitchen-pour-water-2", variant=2)])
    pytester.makeconftest("""
import sys

def pytest_unconfigure(config):
    print("numpy loaded:", "numpy" in sys.modules)
""")
    args = ["kitchen.yaml", "--imagetime-model=procedural", SMALL, "-s",
            "--imagetime-judge=pixel"]
    first = pytester.runpytest_subprocess(*args)
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(["numpy loaded: True"])
    confidence = _report(pytester)["confidence"]
    again = pytester.runpytest_subprocess(*args)
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(["numpy loaded: False"])
    assert _report(pytester)["confidence"] == confidence
