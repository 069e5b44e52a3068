"""``plugin/reporter.py``: the controller's reporter and its one-line item errors, asked
directly once a small run has finished."""

from __future__ import annotations

import pytest

from pytest_imagetime.plugin.reporter import ImagetimeReporter, OneLineItemErrors
from tests.builders import case_dict, write_case_file
from tests.plugin.session_spy import run_with_spy

ARGS = ("kitchen.yaml", "--imagetime-model=procedural", "--imagetime-judge=pixel",
        "--imagetime-size=128")


@pytest.fixture
def reporter(pytester: pytest.Pytester) -> ImagetimeReporter:
    write_case_file(pytester.path / "kitchen.yaml", [case_dict()])
    recorder, spy = run_with_spy(pytester, *ARGS)
    recorder.assertoutcome(passed=1)
    found = spy.plugins["imagetime-reporter"]
    assert isinstance(found, ImagetimeReporter)
    return found


def test_the_reporter_keeps_the_written_report_without_its_items(
        reporter: ImagetimeReporter, pytester: pytest.Pytester) -> None:
    [(path, report)] = reporter.reports
    assert path.is_file() and path.is_relative_to(pytester.path)
    assert "items" not in report
    assert report["manifest"]["model"]["spec"] == "procedural"
    assert report["aggregate"]["n"] == 1
    assert len(reporter.ran_keys) == 1
    assert reporter.records == {}  # each run's records left with its report
    assert reporter.item_errors == [] and reporter.gate_results == []


def test_the_errors_rerun_command_is_the_last_failed_with_the_run_options(
        reporter: ImagetimeReporter) -> None:
    assert reporter.rerun_errors_command() == (
        "pytest --lf --imagetime-model=procedural --imagetime-judge=pixel "
        "--imagetime-size=128")


def test_the_item_errors_list_is_registered_with_its_reporter(
        pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [case_dict()])
    _, spy = run_with_spy(pytester, *ARGS)
    errors = spy.plugins["imagetime-item-errors"]
    assert isinstance(errors, OneLineItemErrors)
    assert errors.reporter is spy.plugins["imagetime-reporter"]


def test_a_worker_has_no_reporter(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    write_case_file(pytester.path / "kitchen.yaml", [case_dict()])
    pytester.makeconftest(
        "import pytest\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_sessionfinish(session):\n"
        "    name = getattr(session.config, 'workerinput', {}).get('workerid', 'controller')\n"
        "    found = session.config.pluginmanager.get_plugin('imagetime-reporter')\n"
        "    (session.config.rootpath / (name + '.txt')).write_text(str(found is not None))\n")
    result = pytester.runpytest_subprocess(*ARGS, "-n", "1")
    assert result.ret == 0
    assert (pytester.path / "controller.txt").read_text() == "True"
    assert (pytester.path / "gw0.txt").read_text() == "False"
