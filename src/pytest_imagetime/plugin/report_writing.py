"""What the controller writes at the session's end: each run's report.json with its gate,
the scores CSV, the baseline update, the HTML report, galleries, JUnit XML and the summary.

The reporter (``reporter.py``) imports this module only when there is something to write, so
a session that only collects loads neither the reports nor the gate.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine.record import ItemRecord
from ..engine.run_spec import RunSpec
from ..engine.runner import now
from ..gate.compare import compare, gate_json, gate_lines
from ..report.coverage import coverage_json, kept_items
from ..report.gallery import write_gallery
from ..report.html import case_url, run_pages, write_html
from ..report.json_report import (
    case_set,
    case_set_of_items,
    items_of,
    report_of_items,
    write_report,
)
from ..report.junit import pytest_suite_properties, write_junit_items
from ..report.pytest_junit import junit_family
from ..report.scores_csv import write_run_records
from ..report.summary import summary_lines
from ..rubric.facts import RUBRIC_VERSION
from ..store.atomic import read_json
from ..store.paths import with_setting
from .state import run_label

if TYPE_CHECKING:
    from .reporter import ImagetimeReporter


def write_session_reports(reporter: ImagetimeReporter) -> None:
    """Each run's report.json, its gate, the baseline update, HTML, galleries and JUnit."""
    if any(reporter.records.values()):
        write_reports(reporter)
    if reporter.options.update_baseline and reporter.options.baseline is not None:
        for path, report in reporter.reports:
            spec = next(s for s in reporter.runs.values() if s.paths.report == path)
            target = reporter.state.baseline_path(spec)
            assert target is not None
            write_report(target, report)
            retire_superseded_baseline(reporter, spec, target)
    if reporter.options.html is not None and reporter.reports:
        write_html_report(reporter, reporter.options.html)
    write_galleries(reporter)
    if reporter.options.junit is not None and reporter.reports:
        # The items this session ran: a report also holds those it kept from earlier runs.
        ran = reporter.ran_keys
        write_junit_items(reporter.options.junit,
                          [[i for i in report["items"] if i["key"] in ran]
                           for _, report in reporter.reports], reporter.messages,
                          case_properties=junit_family(reporter.config) == "xunit1",
                          reports=[report for _, report in reporter.reports],
                          root=reporter.config.invocation_params.dir)
    if reporter.pytest_junit is not None:
        reporter.pytest_junit.suite_properties(
            pytest_suite_properties([report for _, report in reporter.reports]))
    # Everything is written: only the summary's part of each report stays, so the end of
    # the session (other plugins' summaries, their imports) reuses the items' memory.
    reporter.reports = [(path, {k: v for k, v in report.items() if k != "items"})
                    for path, report in reporter.reports]


def retire_superseded_baseline(reporter: ImagetimeReporter, spec: RunSpec, written: Path) -> None:
    """A candidate gated on another model's run of the baseline directory replaces it
    there: the directory keeps one run of the judge, so the next checkpoint finds it."""
    found = reporter.state.baseline_found.get(str(spec.paths.run_dir))
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
    reporter.retired_baselines.append(found)


def write_reports(reporter: ImagetimeReporter) -> None:
    """Each run's report of the items this session ran and of the run directory's other
    current items, compared with its baseline."""
    created = now()
    suite = reporter.state.suite
    scope = suite.scope(reporter.options.shard)
    in_scope = {case_id: suite.cases[case_id] for case_id in scope}
    for spec in reporter.runs.values():
        records = reporter.records.pop(str(spec.paths.run_dir), None)
        if not records:
            continue
        # The last report of this run lends its intervals if its scores are these.
        previous = read_json(spec.paths.report)  # None when there is none
        manifest = run_manifest(reporter, spec, records)
        # The records become the report's items (and leave memory as they do): the
        # HTML links and the JUnit file below are made from those items.
        items = items_of(records)
        ran = len(items)
        reporter.ran_keys.update(i["key"] for i in items)
        # The directory's other current items stay: a subset updates a full report.
        kept = kept_items(previous if isinstance(previous, dict) else None, manifest,
                          in_scope, (i["key"] for i in items))
        if kept:
            items = sorted(items + kept, key=lambda i: str(i["key"]))
            manifest["cases"] = case_set_of_items(items)
        report = report_of_items(manifest, items, created,
                                 previous if isinstance(previous, dict) else None)
        report["coverage"] = coverage_json(items, suite, reporter.options.shard, ran)
        if reporter.options.limit is not None:
            report["limit"] = reporter.options.limit
        if reporter.canaries is not None:
            report["canaries"] = reporter.canaries
        baseline = reporter.state.baselines.get(str(spec.paths.run_dir))
        if baseline is not None:
            result = compare(baseline, report, reporter.options.max_drop, reporter.options.floors,
                             reporter.options.gate_significant,
                             reporter.options.allow_judge_change, run=run_label(spec))
            reporter.gate_results.append(result)
            report["gate"] = gate_json(result)
        reporter.config.hook.pytest_imagetime_update_report(report=report, config=reporter.config)
        write_report(spec.paths.report, report)
        write_run_records(spec.paths.run_dir, spec.judge, report["items"])
        reporter.reports.append((spec.paths.report, report))


def write_galleries(reporter: ImagetimeReporter) -> None:
    for spec in reporter.runs.values():
        if spec.judged:
            continue
        title = f"{with_setting(spec.model.name, spec.setting, spec.grid)}: dense grids"
        written = write_gallery(spec.paths.model_dir, title)
        if written is None:
            continue
        reporter.galleries.append(written)
        if reporter.options.html is not None:
            target = reporter.options.html / f"gallery-{written.parent.name}.html"
            if write_gallery(spec.paths.model_dir, title, target) is not None:
                reporter.galleries.append(target)


def write_html_report(reporter: ImagetimeReporter, folder: Path) -> None:
    """The HTML report of this session's runs; failures and errors link to their card."""
    run_dirs = [path.parent for path, _ in reporter.reports]
    write_html(run_dirs, folder)
    for (_, report), page in zip(reporter.reports, run_pages(run_dirs), strict=True):
        for item in report["items"]:
            if item["status"] != "passed":
                link = f"case page: {(folder / case_url(page, item['case_id']))}"
                text = reporter.messages.get(item["key"], item["error"] or "")
                reporter.messages[item["key"]] = f"{text}\n{link}" if text else link


def run_manifest(reporter: ImagetimeReporter, spec: RunSpec,
                 records: list[ItemRecord]) -> dict[str, Any]:
    options = reporter.options
    return {
        "model": {"spec": spec.model.name, "config": dict(spec.model.config())},
        "judge": {"name": spec.judge.name, "config": dict(spec.judge.config())},
        "setting": spec.setting, "size": spec.size, "seed": spec.run_seed,
        "pass_threshold": reporter.options.pass_threshold,
        "judge_repeats": spec.repeats,
        "rubric_version": RUBRIC_VERSION,
        "run_dir": str(spec.paths.run_dir),
        "cases": case_set(records),
        "shard": None if options.shard is None else "{}/{}".format(*options.shard),
        "shard_source": reporter.options.shard_source or None,
    }


def write_summary(reporter: ImagetimeReporter, tr: Any) -> None:
    """The summary of the reports written, the gate's lines and where the files are."""
    tr.write_sep("=", "ImageTime summary")
    for line in summary_lines([report for _, report in reporter.reports]):
        tr.write_line(line)
    for _, report in reporter.reports:
        coverage = report["coverage"]
        if coverage["kept"]:
            tr.write_line(f"{_report_name(report)}: {coverage['ran']} items ran in this "
                          f"session; {coverage['kept']} kept from this directory's last "
                          f"report")
        if coverage.get("non_square"):
            tr.write_line(f"{_report_name(report)}: sheets not square: "
                          f"{coverage['non_square']} (the protocol's sheet is square; "
                          "their items say square: false in report.json)")
    for path, _ in reporter.reports:
        tr.write_line(f"report: {path}")
    if reporter.options.junit is not None:
        tr.write_line(f"junit: {reporter.options.junit}")
    if reporter.options.html is not None:
        tr.write_line(f"html: {reporter.options.html / 'index.html'}")
    if reporter.gate_results:
        tr.write_sep("=", "ImageTime gate")
        for line in gate_lines(reporter.gate_results):
            tr.write_line(line)
    if reporter.options.update_baseline and reporter.options.baseline is not None:
        tr.write_line(f"baseline updated: {reporter.options.baseline}")
        for retired in reporter.retired_baselines:
            tr.write_line(f"baseline replaced: {retired} (removed)")


def _report_name(report: dict[str, Any]) -> str:
    manifest = report["manifest"]
    return with_setting(str(manifest["model"]["spec"]), manifest["setting"])
