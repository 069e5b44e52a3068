"""The controller's reporter: registered only where there is no ``workerinput`` (as pytest
registers its LogXML), it collects every item's record and progress, and at the session's end
hands them to ``report_writing.py`` (report.json, gate, JUnit XML, CSV, HTML, galleries,
summary), imported only then.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..cases.loading import load_case_file
from ..cases.model import CaseFileError
from ..report.pytest_junit import PytestJunit, pytest_junit_of
from .collect import CaseItem, base_record, packaged_argument
from .error_summary import ItemErrorLine
from .error_summary import summary_lines as error_summary_lines
from .failure_text import last_line, report_text, setup_error_reason
from .progress import Progress
from .rerun import cwd_relative, rerun_command
from .scheduling import is_case_nodeid
from .state import ImagetimeState

# The records load when the first item reports; the reports and gate at the session's end.
if TYPE_CHECKING:
    from ..engine.record import ItemRecord
    from ..gate.compare import GateResult


class ImagetimeReporter:
    """The records of a run's items, and what is written from them at the session's end."""

    def __init__(self, state: ImagetimeState) -> None:
        self.state = state
        self.config = state.config
        self.options = state.options
        self.runs = state.runs
        self.canaries: list[dict[str, Any]] | None = None
        self.gate_results: list[GateResult] = []
        self.retired_baselines: list[Path] = []
        self.progress = Progress(self.options.progress_every_s, state.write_line)
        self._outcomes: dict[str, tuple[str, str]] = {}
        self.records: dict[str, list[ItemRecord]] = {}
        self.messages: dict[str, str] = {}
        self.reports: list[tuple[Path, dict[str, Any]]] = []
        self.galleries: list[Path] = []
        self.pytest_junit: PytestJunit | None = None  # known once every plugin is configured
        self.ran_keys: set[str] = set()  # items this session ran: its JUnit file's
        self._selection_checked = False
        self.item_errors: list[ItemErrorLine] = []  # shown by OneLineItemErrors

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.pytest_junit = pytest_junit_of(self.config)
        if self.options.canaries and self.options.judge_options.calls:
            from ..engine.canaries import run_canaries  # draws sheets: numpy only when asked for

            # Judged at once, before the items: through the judge a batch wraps.
            self.canaries = run_canaries(self.state.judge.answering, self.options.setting)

    # First: pytest's own JUnit file takes a case's properties from its teardown report.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "setup" and report.failed:
            self._outcomes[report.nodeid] = ("error", report_text(report))
        elif report.when == "call":
            status = "passed" if report.passed else "failed"
            self._outcomes[report.nodeid] = (status, report_text(report))
        elif report.when == "teardown":
            self._finish_item(report)
        elif report.failed and report.when not in ("setup", "call"):
            self._record_crash(report)

    def _record_crash(self, report: pytest.TestReport) -> None:
        """An item whose xdist worker died under it: xdist reports it once, failed, with no
        record of ours; the reports count it as an error with xdist's reason."""
        from ..engine.record import ItemRecord  # records load when the first item reports

        selected = self.state.selected_in([report.nodeid])
        if not selected:
            return
        run, case_id = selected[0]
        self._outcomes.pop(report.nodeid, None)  # a setup or call it reported before dying
        # A packaged case file's node id is its bare name: found where packaged_argument finds it.
        path = self.config.rootpath / packaged_argument(report.nodeid.split("::", 1)[0],
                                                        self.config.rootpath)
        try:
            case = next(c for c in load_case_file(path) if c.id == case_id)
        except (CaseFileError, OSError, StopIteration):
            self.state.write_line(f"[imagetime] {report.nodeid}: its worker crashed, and its "
                                  f"case cannot be read again from {path}: it is missing from "
                                  f"the report")
            return
        text = last_line(report.longreprtext) or "its worker crashed"  # not the worker header
        reason = f"{text} (the xdist worker running it died: killed, out of memory, or a crash)"
        # Through its properties, as every item's record reaches this process.
        record = ItemRecord.from_properties(base_record(case, run).to_properties())
        assert record is not None
        record = record.with_status("error", reason)
        self.records.setdefault(record.run_dir, []).append(record)
        self.progress.item(None, True, 0.0)
        self.messages[record.key] = reason

    def _finish_item(self, report: pytest.TestReport) -> None:
        from ..engine.record import ItemRecord  # records load when the first item reports

        outcome = self._outcomes.pop(report.nodeid, None)
        # Rebuilt from the properties even in this process: a serial run's report then holds
        # exactly what an xdist run's does (the properties round their values).
        record = ItemRecord.from_properties(report.user_properties)
        if outcome is None or record is None:
            return  # skipped, or not an ImageTime item
        status, text = outcome
        if status == "error":
            item_error = bool(record.error)  # an ItemError's one line; else a traceback
            reason = setup_error_reason(record.error, text)
            record = record.with_status("error", reason)
            if item_error:
                nodeid = cwd_relative(self.config, report.nodeid)
                self.item_errors.append(ItemErrorLine(nodeid, record.case_id, reason))
        else:
            record = record.with_status(status)
        self.records.setdefault(record.run_dir, []).append(record)
        if self.pytest_junit is not None:
            from ..report.junit import case_output  # reports load when the first item reports

            self.pytest_junit.case(report, "imagetime.", record.to_properties(),
                                    case_output(record, self.config.invocation_params.dir))
        self.progress.item(record.overall, record.status == "error",
                           record.cost_usd if record.judged else 0.0)
        if text:
            self.messages[record.key] = text

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.progress.expect(sum(isinstance(i, CaseItem) for i in session.items))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.progress.expect(sum(is_case_nodeid(i) for i in ids))
        if not self._selection_checked and not self.config.option.collectonly:
            self._selection_checked = True  # every worker collects the same items
            self.state.check_selection(self.state.selected_in(ids))

    # First: under xdist every report has arrived once the test loop ends, and the reports
    # are then written while the workers shut down (xdist's own hook waits for them).
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if (any(self.records.values()) or self.pytest_junit is not None
                or any(not spec.judged for spec in self.runs.values())):
            # The boundary: the reports and the gate load when there is something to write.
            from .report_writing import write_session_reports

            write_session_reports(self)
        if any(result.breached for result in self.gate_results):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.state.estimate_printed and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK  # the dry run did what it was asked

    def rerun_errors_command(self) -> str:
        """A command that reruns exactly the items that failed or erred (pytest's ``--lf``)."""
        return rerun_command(self.config, ["--lf"], self.runs)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        if self.item_errors and not getattr(tr, "no_summary", False):
            tr.write_sep("=", "ImageTime item errors")
            for line in error_summary_lines(self.item_errors, per_item=tr.hasopt("E")):
                tr.write_line(line)
            tr.write_line(f"rerun them alone: {self.rerun_errors_command()}")
        for gallery in self.galleries:
            tr.write_line(f"dense-grid gallery (qualitative, not scored): {gallery}")
        if not self.reports:
            return
        from .report_writing import write_summary  # loaded by pytest_sessionfinish already

        write_summary(self, tr)


class OneLineItemErrors:
    """Lists each item error on one line (``ImagetimeReporter.pytest_terminal_summary``), in
    place of pytest's ERRORS section and short summary lines of the same items, with a count
    of each reason: 750 items that fail alike then read as one reason, not 2,250 lines."""

    def __init__(self, reporter: ImagetimeReporter) -> None:
        self.reporter = reporter

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        errors = terminalreporter.stats.get("error")
        config = terminalreporter.config
        ours = {e.nodeid for e in self.reporter.item_errors}
        if not errors or not ours or getattr(terminalreporter, "no_summary", False):
            return (yield)
        every = list(errors)
        # Out of pytest's sight only while it writes its sections; its counts see them all.
        errors[:] = [r for r in every
                     if not (r.when == "setup" and cwd_relative(config, r.nodeid) in ours)]
        try:
            return (yield)
        finally:
            errors[:] = every
