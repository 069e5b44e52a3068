"""The controller's reporter: registered only where there is no ``workerinput`` (as pytest
registers its LogXML), it collects every item's record, writes each run's report.json, the
JUnit XML, the scores CSV, the HTML report and the galleries, gates the runs against their
baselines and writes the terminal summary.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..cases.loading import load_case_file
from ..cases.model import CaseFileError
from ..report.pytest_junit import PytestJunit, junit_family, pytest_junit_of
from ..rubric.facts import RUBRIC_VERSION
from ..store.atomic import read_json
from ..store.paths import with_setting
from .collect import CaseItem, base_record, packaged_argument
from .error_summary import ItemErrorLine
from .error_summary import summary_lines as error_summary_lines
from .failure_text import last_line, report_text
from .progress import Progress
from .rerun import cwd_relative, rerun_command
from .scheduling import is_case_nodeid
from .state import ImagetimeState, run_label

# The records, reports and gate are imported when the first item is reported.
if TYPE_CHECKING:
    from ..engine.record import ItemRecord
    from ..engine.run_spec import RunSpec
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
        self._pytest_junit: PytestJunit | None = None  # known once every plugin is configured
        self._ran_keys: set[str] = set()  # items this session ran: its JUnit file's
        self._selection_checked = False
        self.item_errors: list[ItemErrorLine] = []  # shown by OneLineItemErrors

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._pytest_junit = pytest_junit_of(self.config)
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
            reason = record.error or last_line(text) or "setup failed"
            record = record.with_status("error", reason)
            if item_error:
                nodeid = cwd_relative(self.config, report.nodeid)
                self.item_errors.append(ItemErrorLine(nodeid, record.case_id, reason))
        else:
            record = record.with_status(status)
        self.records.setdefault(record.run_dir, []).append(record)
        if self._pytest_junit is not None:
            from ..report.junit import case_output  # reports load when the first item reports

            self._pytest_junit.case(report, "imagetime.", record.to_properties(),
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
        if any(self.records.values()):
            self._write_reports()
        if any(result.breached for result in self.gate_results):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.state.estimate_printed and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK  # the dry run did what it was asked
        if self.options.update_baseline and self.options.baseline is not None:
            from ..report.json_report import write_report  # not in a session that only collects

            for path, report in self.reports:
                spec = next(s for s in self.runs.values() if s.paths.report == path)
                target = self.state.baseline_path(spec)
                assert target is not None
                write_report(target, report)
                self._retire_superseded_baseline(spec, target)
        if self.options.html is not None and self.reports:
            self._write_html(self.options.html)
        self._write_galleries()
        if self.options.junit is not None and self.reports:
            from ..report.junit import write_junit_items  # a session with reports only

            # The items this session ran: a report also holds those it kept from earlier runs.
            ran = self._ran_keys
            write_junit_items(self.options.junit,
                              [[i for i in report["items"] if i["key"] in ran]
                               for _, report in self.reports], self.messages,
                              case_properties=junit_family(self.config) == "xunit1",
                              reports=[report for _, report in self.reports],
                              root=self.config.invocation_params.dir)
        if self._pytest_junit is not None:
            from ..report.junit import pytest_suite_properties  # with pytest's --junitxml

            self._pytest_junit.suite_properties(
                pytest_suite_properties([report for _, report in self.reports]))
        # Everything is written: only the summary's part of each report stays, so the end of
        # the session (other plugins' summaries, their imports) reuses the items' memory.
        self.reports = [(path, {k: v for k, v in report.items() if k != "items"})
                        for path, report in self.reports]

    def _retire_superseded_baseline(self, spec: RunSpec, written: Path) -> None:
        """A candidate gated on another model's run of the baseline directory replaces it
        there: the directory keeps one run of the judge, so the next checkpoint finds it."""
        found = self.state.baseline_found.get(str(spec.paths.run_dir))
        if found is None or found == written or not found.is_file():
            return
        # Only a report alone in its folder, as the update writes them: never a run
        # directory with its judgments (a baseline pointed at an output directory).
        if any(entry.name != found.name for entry in found.parent.iterdir()):
            return
        found.unlink()
        for folder in (found.parent, found.parent.parent):
            with contextlib.suppress(OSError):  # not empty: another judge's run is there
                folder.rmdir()
        self.retired_baselines.append(found)

    def _write_reports(self) -> None:
        """Each run's report of the items this session ran and of the run directory's other
        current items, compared with its baseline."""
        # The reports and the gate load when there is something to report.
        from ..engine.runner import now
        from ..gate.compare import compare, gate_json
        from ..report.coverage import coverage_json, kept_items
        from ..report.json_report import case_set_of_items, items_of, report_of_items, write_report
        from ..report.scores_csv import write_run_records

        created = now()
        suite = self.state.suite
        scope = suite.scope(self.options.shard)
        in_scope = {case_id: suite.cases[case_id] for case_id in scope}
        for spec in self.runs.values():
            records = self.records.pop(str(spec.paths.run_dir), None)
            if not records:
                continue
            # The last report of this run lends its intervals if its scores are these.
            previous = read_json(spec.paths.report)  # None when there is none
            manifest = self._manifest(spec, records)
            # The records become the report's items (and leave memory as they do): the
            # HTML links and the JUnit file below are made from those items.
            items = items_of(records)
            ran = len(items)
            self._ran_keys.update(i["key"] for i in items)
            # The directory's other current items stay: a subset updates a full report.
            kept = kept_items(previous if isinstance(previous, dict) else None, manifest,
                              in_scope, (i["key"] for i in items))
            if kept:
                items = sorted(items + kept, key=lambda i: str(i["key"]))
                manifest["cases"] = case_set_of_items(items)
            report = report_of_items(manifest, items, created,
                                     previous if isinstance(previous, dict) else None)
            report["coverage"] = coverage_json(items, suite, self.options.shard, ran)
            if self.options.limit is not None:
                report["limit"] = self.options.limit
            if self.canaries is not None:
                report["canaries"] = self.canaries
            baseline = self.state.baselines.get(str(spec.paths.run_dir))
            if baseline is not None:
                result = compare(baseline, report, self.options.max_drop, self.options.floors,
                                 self.options.gate_significant,
                                 self.options.allow_judge_change, run=run_label(spec))
                self.gate_results.append(result)
                report["gate"] = gate_json(result)
            self.config.hook.pytest_imagetime_update_report(report=report, config=self.config)
            write_report(spec.paths.report, report)
            write_run_records(spec.paths.run_dir, spec.judge, report["items"])
            self.reports.append((spec.paths.report, report))

    def _write_galleries(self) -> None:
        for spec in self.runs.values():
            if spec.judged:
                continue
            from ..report.gallery import write_gallery  # only runs of dense grids have one

            title = f"{with_setting(spec.model.name, spec.setting, spec.grid)}: dense grids"
            written = write_gallery(spec.paths.model_dir, title)
            if written is None:
                continue
            self.galleries.append(written)
            if self.options.html is not None:
                target = self.options.html / f"gallery-{written.parent.name}.html"
                if write_gallery(spec.paths.model_dir, title, target) is not None:
                    self.galleries.append(target)

    def _write_html(self, folder: Path) -> None:
        """The HTML report of this session's runs; failures and errors link to their card."""
        from ..report.html import case_url, run_pages, write_html  # only with --imagetime-html

        run_dirs = [path.parent for path, _ in self.reports]
        write_html(run_dirs, folder)
        for (_, report), page in zip(self.reports, run_pages(run_dirs), strict=True):
            for item in report["items"]:
                if item["status"] != "passed":
                    link = f"case page: {(folder / case_url(page, item['case_id']))}"
                    text = self.messages.get(item["key"], item["error"] or "")
                    self.messages[item["key"]] = f"{text}\n{link}" if text else link

    def _manifest(self, spec: RunSpec, records: list[ItemRecord]) -> dict[str, Any]:
        from ..report.json_report import case_set  # loaded with the reports

        return {
            "model": {"spec": spec.model.name, "config": dict(spec.model.config())},
            "judge": {"name": spec.judge.name, "config": dict(spec.judge.config())},
            "setting": spec.setting, "size": spec.size, "seed": spec.run_seed,
            "pass_threshold": self.options.pass_threshold,
            "judge_repeats": spec.repeats,
            "rubric_version": RUBRIC_VERSION,
            "run_dir": str(spec.paths.run_dir),
            "cases": case_set(records),
            "shard": None if self.options.shard is None else "{}/{}".format(*self.options.shard),
            "shard_source": self.options.shard_source or None,
        }

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
        # Loaded with the reports, which exist by now.
        from ..gate.compare import gate_lines
        from ..report.summary import summary_lines

        tr.write_sep("=", "ImageTime summary")
        for line in summary_lines([report for _, report in self.reports]):
            tr.write_line(line)
        for _, report in self.reports:
            coverage = report["coverage"]
            if coverage["kept"]:
                tr.write_line(f"{_report_name(report)}: {coverage['ran']} items ran in this "
                              f"session; {coverage['kept']} kept from this directory's last "
                              f"report")
            if coverage.get("non_square"):
                tr.write_line(f"{_report_name(report)}: sheets not square: "
                              f"{coverage['non_square']} (the protocol's sheet is square; "
                              "their items say square: false in report.json)")
        for path, _ in self.reports:
            tr.write_line(f"report: {path}")
        if self.options.junit is not None:
            tr.write_line(f"junit: {self.options.junit}")
        if self.options.html is not None:
            tr.write_line(f"html: {self.options.html / 'index.html'}")
        if self.gate_results:
            tr.write_sep("=", "ImageTime gate")
            for line in gate_lines(self.gate_results):
                tr.write_line(line)
        if self.options.update_baseline and self.options.baseline is not None:
            tr.write_line(f"baseline updated: {self.options.baseline}")
            for retired in self.retired_baselines:
                tr.write_line(f"baseline replaced: {retired} (removed)")


def _report_name(report: dict[str, Any]) -> str:
    manifest = report["manifest"]
    return with_setting(str(manifest["model"]["spec"]), manifest["setting"])


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
