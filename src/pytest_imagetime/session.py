"""An active ImageTime session: collection of case files, the item, and reporting glue.

Imported by the plugin (``plugin.py``) only when a run asks for a model, so that a test
session that does not use the benchmark never imports the backends, numpy or the reports.
Workers under xdist run items; only the controller writes reports.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .cases import (
    Case,
    CaseFileError,
    Problem,
    builtin_cases_dir,
    load_case_file,
    looks_like_case_file,
)
from .error_summary import ItemErrorLine
from .error_summary import summary_lines as error_summary_lines
from .failure_text import PlainFailures
from .inventory import slug
from .item_error import ItemError
from .markers import Markers
from .models.own_process import OwnProcessModel, factory_of, may_draw_in_own_process
from .options import Options
from .progress import Progress
from .registry import JUDGES, MODELS, UnknownBackend
from .replay import item_can_replay, replay, session_can_replay
from .rubric import LEVEL_KEYS, RUBRIC_VERSION
from .run_lock import FolderClaims
from .run_spec import RunSpec
from .scheduling import is_case_nodeid, shard_cases, share_of
from .store import RunPaths, read_json, with_setting

# What runs items (runner, pipeline, records, conditions) and what reports on them (reports,
# gate) is imported when first used: a session that only collects (--collect-only, a dry
# run, a -k selection that leaves nothing) never loads them, nor Pillow and numpy.
if TYPE_CHECKING:
    from .gate import GateResult
    from .judges.base import Judge
    from .models.base import ImageModel
    from .pipeline import Job, Pipeline, Result
    from .record import ItemRecord
    from .references import References
    from .runner import ItemOutcome, Sheet

PLUGIN_NAME = "imagetime-session"
session_key = pytest.StashKey["ImagetimeSession"]()


def start(config: pytest.Config, options: Options) -> None:
    """Set up the session of a run that asks for a model (``options.active``)."""
    if options.dry_run:
        # A dry run only counts: no workers to start (before xdist's own configure runs).
        config.option.dist = "no"
        config.option.numprocesses = None
    _register_markers(config)
    if not _is_xdist_worker(config):
        _check_outputs(config, options)
    session = ImagetimeSession(config, options)
    if not _is_xdist_worker(config) and not options.dry_run and not config.option.collectonly:
        session.claim_folders()
    config.stash[session_key] = session
    config.pluginmanager.register(session, PLUGIN_NAME)
    config.pluginmanager.register(OneLineItemErrors(session), "imagetime-item-errors")
    if config.pluginmanager.hasplugin("xdist"):
        from .scheduling import XdistHooks

        config.pluginmanager.register(XdistHooks(), "imagetime-xdist")
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # No paths given: a benchmark run collects the packaged cases and nothing else.
        config.args = [str(builtin_cases_dir())]


def _check_outputs(config: pytest.Config, options: Options) -> None:
    """Refuse output paths that cannot be written before any item runs (a session that
    writes nothing, collecting only or a dry run, is let be)."""
    if options.dry_run or config.option.collectonly:
        return
    from .writable import UnwritablePath, check_run_outputs

    try:
        check_run_outputs(options.out, options.junit, options.html,
                          getattr(config.option, "xmlpath", None))
    except UnwritablePath as exc:
        raise pytest.UsageError(str(exc)) from None


def _register_markers(config: pytest.Config) -> None:
    from .inventory import domains

    lines = ["imagetime: an ImageTime benchmark item"]
    lines += [f"imagetime_{k}: ImageTime items probing capability level {k}" for k in LEVEL_KEYS]
    lines += [f"imagetime_{d}: ImageTime items of difficulty {d}"
              for d in ("easy", "medium", "hard")]
    lines += [f"imagetime_domain_{slug(d)}: ImageTime items of domain {d}" for d in domains()]
    lines += [f"imagetime_{flag}: ImageTime items with the {flag} applicability flag"
              for flag in ("constraint", "quantity", "occlusion")]
    for line in lines:
        config.addinivalue_line("markers", line)


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _resolve(kind: str, spec: str, registry: Any, **context: Any) -> Any:
    try:
        return registry.create(spec, **context)
    except (UnknownBackend, ValueError) as exc:
        raise pytest.UsageError(f"--imagetime-{kind}={spec}: {exc}") from None
    except ImportError as exc:
        raise pytest.UsageError(f"--imagetime-{kind}={spec}: {exc}") from None


def _check_model_fits(spec: str, model: ImageModel, options: Options) -> None:
    if options.setting == "scaffold" and not getattr(model, "accepts_reference", False):
        raise pytest.UsageError(
            f"--imagetime-model={spec}: this backend cannot complete a scaffold (it takes no "
            f"reference image); the scaffold setting needs an edit-capable backend: "
            f"flux-kontext, qwen-image-edit, flux2-dev, openai-images, "
            f"diffusers:REPO:edit=true, or a third-party backend with accepts_reference")


class ImagetimeSession:
    """Run state of one pytest process: resolved backends, and on the controller the results."""

    def __init__(self, config: pytest.Config, options: Options) -> None:
        self.config = config
        self.options = options
        judge: Judge = _resolve("judge", options.judge, JUDGES, options=options.judge_options)
        self.judge = judge
        self.runs: dict[str, RunSpec] = {}
        references = self._references(options)
        for spec in options.models:
            model: ImageModel = _resolve("model", spec, MODELS, options=options.model_options)
            _check_model_fits(spec, model, options)
            choice = options.model_options.process
            if may_draw_in_own_process(model, choice):
                model = OwnProcessModel(factory_of(MODELS, spec, options.model_options), model,
                                        choice)
            paths = RunPaths(options.out, model.name, judge.name, options.setting, options.grid)
            self.runs[spec] = RunSpec(model=model, judge=judge, paths=paths,
                                      setting=options.setting, size=options.size,
                                      run_seed=options.seed, regenerate=options.regenerate,
                                      rejudge=options.rejudge, repeats=options.judge_repeats,
                                      grid=options.grid, references=references,
                                      batch_size=options.model_options.batch_size)
        workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
        budget = None if options.max_cost is None else options.max_cost / workers
        if budget is not None and getattr(judge, "price", True) is None:
            raise pytest.UsageError(
                f"--imagetime-max-cost needs the judge's price, and none is known for "
                f"{judge.config().get('judge_model')!r}: give --imagetime-judge-price=IN,OUT "
                "(USD per 1M tokens)")
        self._budget = budget
        self._pipeline: Pipeline | None = None
        self.canaries: list[dict[str, Any]] | None = None
        self.planning_done = False
        self.replays = session_can_replay(config)
        # What the store gave an item that the protocol looked up before its setup.
        self._looked_up: dict[str, Result | None] = {}
        self.markers = Markers(config)
        self.gate_results: list[GateResult] = []
        self.baselines = self._load_baselines()
        self.progress = Progress(options.progress_every_s, self._write_line)
        self._outcomes: dict[str, tuple[str, str]] = {}
        self.records: dict[str, list[ItemRecord]] = {}
        self.messages: dict[str, str] = {}
        self.reports: list[tuple[Path, dict[str, Any]]] = []
        self.galleries: list[Path] = []
        self._selection_checked = False
        self.claims = FolderClaims()  # the model folders this session writes
        self._case_files: dict[str, tuple[Path, str, int | None]] = {}  # by case id
        self.item_errors: list[ItemErrorLine] = []  # shown by OneLineItemErrors

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline of this process's items, made when the first item asks for it."""
        if self._pipeline is None:
            from .pipeline import CostBudget, Pipeline, model_concurrency

            concurrency = self.options.judge_options.concurrency
            drawing = max((model_concurrency(run) for run in self.runs.values()), default=1)
            # Room for a whole batch, and for every hosted request in flight, on top of the
            # sheets waiting for a judge.
            lookahead = max(2 * concurrency, 2 * self.options.model_options.batch_size,
                            2 * drawing)
            self._pipeline = Pipeline(concurrency=concurrency, lookahead=lookahead,
                                      budget=CostBudget(self._budget),
                                      generation_concurrency=drawing)
        return self._pipeline

    def _references(self, options: Options) -> References | None:
        if options.setting != "scaffold":
            return None
        from .references import GeneratedReferences, ReferenceDir
        from .runner import case_seed

        if options.reference_dir is not None:
            return ReferenceDir(options.reference_dir)
        assert options.reference_model is not None  # parse_options demands one of the two
        model: ImageModel = _resolve("reference-model", options.reference_model, MODELS,
                                     options=options.model_options)
        return GeneratedReferences(model, options.out, options.size,
                                   functools.partial(case_seed, options.seed))

    # ------------------------------------------------------------ collection

    def pytest_collect_file(self, file_path: Path,
                            parent: pytest.Collector) -> pytest.Collector | None:
        if file_path.suffix not in (".yaml", ".yml"):
            return None
        if parent.session.isinitpath(file_path) or looks_like_case_file(file_path):
            return CaseFile.from_parent(parent, path=file_path)
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        if self.baselines:
            self._mark_known_failures(items)
        if self.options.shard is not None:
            kept = shard_cases([i.case.id for i in items if isinstance(i, CaseItem)],
                               self.options.shard)
            others = [i for i in items if isinstance(i, CaseItem) and i.case.id not in kept]
            if others:
                config.hook.pytest_deselected(items=others)
                items[:] = [i for i in items if not isinstance(i, CaseItem)
                            or i.case.id in kept]
        if not config.option.collectonly and not _is_xdist_worker(config):
            # Under xdist the controller checks, as the workers' collections arrive.
            self._check_selection([(i.run, i.case.id) for i in items if isinstance(i, CaseItem)])
        if not self.options.dry_run:
            return
        from .estimate import estimate, estimate_lines

        ours = [i for i in items if isinstance(i, CaseItem)]
        estimates = [estimate(run, [i.case for i in ours if i.run is run])
                     for run in self.runs.values()]
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "ImageTime dry run")
            for line in estimate_lines(estimates, self.judge.config()):
                reporter.write_line(line)
        config.hook.pytest_deselected(items=list(items))
        items[:] = []

    def claim_folders(self) -> None:
        """Claim each model folder this session writes (``run_lock.py``): a live session
        writing it with other settings is refused here, before any item runs. Then remove
        what killed runs left there half written."""
        from .run_lock import SettingsConflict
        from .store import input_key, remove_abandoned_temporaries

        folders: dict[Path, dict[str, Any]] = {}
        for run in self.runs.values():
            claim = folders.setdefault(run.paths.model_dir, {"sheets": {
                "model": run.model.name,
                "model_config_sha256": input_key(dict(run.model.config())),
                "setting": run.setting, "size": run.size, "seed": run.run_seed,
                "grid": list(run.grid)}, "judges": {}})
            claim["judges"][run.paths.run_dir.name] = input_key(dict(run.judge.config()))
        try:
            for folder, settings in folders.items():
                self.claims.claim(folder, settings)
        except SettingsConflict as exc:
            self.claims.release()
            raise pytest.UsageError(f"--imagetime-out={self.options.out}: {exc}") from None
        # This session's folders, and the files beside them (the JUnit file, by default):
        # not all of the output folder, which may be a checkout's root.
        trees = [*folders, *([self.options.html] if self.options.html is not None else [])]
        beside = [self.options.out] + ([self.options.junit.parent]
                                       if self.options.junit is not None else [])
        remove_abandoned_temporaries([p for p in trees if p.is_dir()], beside)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.claims.release()

    def claim_case_ids(self, path: Path, display: str, cases: tuple[Case, ...]) -> None:
        """Raise CaseFileError when a case id of this file was collected from another one:
        a case id names its stored sheet and judgment, so two cases would share them."""
        problems = []
        for case in cases:
            other = self._case_files.setdefault(case.id, (path, display, case.line))
            if other[0] != path:
                where = other[1] if other[2] is None else f"{other[1]}:{other[2]}"
                problems.append(Problem(
                    display, f"this case id is also defined in {where}; case ids must be "
                    f"unique across the case files of a run (each names its stored sheet and "
                    f"judgment)", line=case.line, case_id=case.id, field="id"))
        if problems:
            raise CaseFileError(problems)

    def _check_selection(self, selected: list[tuple[RunSpec, str]]) -> None:
        """Refuse a model that can make none of the selected cases (``files:DIR`` without
        a file for any of them) before the first item, where a backend can tell."""
        for spec, run in self.runs.items():
            check = getattr(run.model, "check_selection", None)
            case_ids = [case_id for of, case_id in selected if of is run]
            if not callable(check) or not case_ids:
                continue
            try:
                check(case_ids)
            except ValueError as exc:
                raise pytest.UsageError(f"--imagetime-model={spec}: {exc}") from None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.options.canaries and not self.options.dry_run \
                and not _is_xdist_worker(self.config):
            from .canaries import run_canaries  # draws sheets: numpy only when asked for

            self.canaries = run_canaries(self.judge, self.options.setting)

    # ------------------------------------------------------------ results (controller)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        if call.when == "setup" and call.excinfo is not None \
                and call.excinfo.errisinstance(ItemError):
            report.longrepr = f"{item.nodeid}: {call.excinfo.value}"
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if _is_xdist_worker(self.config):
            return
        if report.when == "setup" and report.failed:
            self._outcomes[report.nodeid] = ("error", report.longreprtext)
        elif report.when == "call":
            status = "passed" if report.passed else "failed"
            # A passed item has no text; rendering its absence still costs a writer.
            text = "" if report.longrepr is None else report.longreprtext
            self._outcomes[report.nodeid] = (status, text)
        elif report.when == "teardown":
            self._finish_item(report)
        elif report.failed and report.when not in ("setup", "call"):
            self._record_crash(report)

    def _record_crash(self, report: pytest.TestReport) -> None:
        """An item whose xdist worker died under it: xdist reports it once, failed, with no
        record of ours; the reports count it as an error with xdist's reason."""
        from .record import ItemRecord

        selected = self._selected_in([report.nodeid])
        if not selected:
            return
        run, case_id = selected[0]
        self._outcomes.pop(report.nodeid, None)  # a setup or call it reported before dying
        path = self.config.rootpath / report.nodeid.split("::", 1)[0]
        try:
            case = next(c for c in load_case_file(path) if c.id == case_id)
        except (CaseFileError, OSError, StopIteration):
            self._write_line(f"[imagetime] {report.nodeid}: its worker crashed, and its case "
                             f"cannot be read again from {path}: it is missing from the report")
            return
        text = _last_line(report.longreprtext) or "its worker crashed"  # not the worker header
        reason = f"{text} (the xdist worker running it died: killed, out of memory, or a crash)"
        # Through its properties, as every item's record reaches this process.
        record = ItemRecord.from_properties(base_record(case, run).to_properties())
        assert record is not None
        record = record.with_status("error", reason)
        self.records.setdefault(record.run_dir, []).append(record)
        self.progress.item(None, True, 0.0)
        self.messages[record.key] = reason

    def _finish_item(self, report: pytest.TestReport) -> None:
        from .record import ItemRecord

        outcome = self._outcomes.pop(report.nodeid, None)
        # Rebuilt from the properties even in this process: a serial run's report then holds
        # exactly what an xdist run's does (the properties round their values).
        record = ItemRecord.from_properties(report.user_properties)
        if outcome is None or record is None:
            return  # skipped, or not an ImageTime item
        status, text = outcome
        if status == "error":
            item_error = bool(record.error)  # an ItemError's one line; else a traceback
            reason = record.error or _last_line(text) or "setup failed"
            record = record.with_status("error", reason)
            if item_error:
                nodeid = _cwd_relative(self.config, report.nodeid)
                self.item_errors.append(ItemErrorLine(nodeid, record.case_id, reason))
        else:
            record = record.with_status(status)
        self.records.setdefault(record.run_dir, []).append(record)
        self.progress.item(record.overall, record.status == "error",
                           record.cost_usd if record.judged else 0.0)
        if text:
            self.messages[record.key] = text

    def _write_line(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(line)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.progress.expect(sum(isinstance(i, CaseItem) for i in session.items))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Under xdist, a case file that fails to collect stops the run before its first
        item, as it does without xdist (whose controller would run the other files' items)."""
        if not report.failed or self.config.pluginmanager.get_plugin("dsession") is None \
                or self.config.option.continue_on_collection_errors \
                or not report.nodeid.endswith((".yaml", ".yml")):
            return
        text = report.longreprtext.strip()
        raise pytest.UsageError(text if text.startswith(report.nodeid)
                                else f"{report.nodeid}: {text}")

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.progress.expect(sum(is_case_nodeid(i) for i in ids))
        if not self._selection_checked and not self.config.option.collectonly:
            self._selection_checked = True  # every worker collects the same items
            self._check_selection(self._selected_in(ids))

    def _selected_in(self, nodeids: list[str]) -> list[tuple[RunSpec, str]]:
        """The run and case id of each case node id (``<file>::<case id>[<run label>]``)."""
        by_label = {with_setting(spec, run.setting, run.grid): run
                    for spec, run in self.runs.items()}
        selected = []
        for nodeid in nodeids:
            if not is_case_nodeid(nodeid):
                continue
            name = nodeid.rsplit("::", 1)[1]
            case_id, _, label = name.partition("[")
            run = by_label.get(label[:-1])
            if run is not None:
                selected.append((run, case_id))
        return selected

    def _baseline_path(self, spec: RunSpec) -> Path | None:
        base = self.options.baseline
        if base is None:
            return None
        if base.suffix == ".json" or base.is_file():
            return base
        return base / spec.paths.run_dir.relative_to(self.options.out) / "report.json"

    def _load_baselines(self) -> dict[str, dict[str, Any]]:
        """Baseline reports by run directory; a missing one is an error unless it is being
        written now."""
        found: dict[str, dict[str, Any]] = {}
        if self.options.baseline is None:
            return found
        for spec in self.runs.values():
            path = self._baseline_path(spec)
            assert path is not None
            report = read_json(path)
            if report is None:
                if self.options.update_baseline:
                    continue
                raise pytest.UsageError(
                    f"--imagetime-baseline={self.options.baseline}: no readable baseline report "
                    f"at {path} (--imagetime-update-baseline writes one)")
            found[str(spec.paths.run_dir)] = report
        return found

    def _mark_known_failures(self, items: list[pytest.Item]) -> None:
        """Items that also failed in the baseline fail as xfail: only new failures fail."""
        for item in items:
            if not isinstance(item, CaseItem):
                continue
            baseline = self.baselines.get(str(item.run.paths.run_dir))
            if baseline is None:
                continue
            for entry in baseline["items"]:
                if entry["case_id"] == item.case.id and entry["status"] == "failed":
                    item.add_marker(pytest.mark.xfail(
                        raises=ConditionsNotMet, strict=False,
                        reason="known failure: it failed in the baseline too"))
                    break

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item,
                                nextitem: pytest.Item | None) -> bool | None:
        """An item whose results are all stored is replayed (``replay.py``): pytest's
        per-phase hooks would cost it more than its lookups. Only until the first item the
        store does not finish: after it, items wait on the pipeline."""
        if self.planning_done or not self.replays or not isinstance(item, CaseItem) \
                or not item_can_replay(item):
            return None
        try:
            finished = self.pipeline.finished(item.job())
        except Exception:  # the full protocol's setup raises it again and reports it
            return None
        self._looked_up[item.nodeid] = finished
        if finished is None:
            return None
        replay(item, nextitem)
        return True

    def result_for(self, item: CaseItem) -> Result:
        """The item's outcome (its sheet for a dense grid); raises ItemError on failure.
        Until the first item that the store does not finish, each is finished here."""
        job = item.job()
        if not self.planning_done:
            if item.nodeid in self._looked_up:
                finished = self._looked_up.pop(item.nodeid)
            else:
                finished = self.pipeline.finished(job)
            if finished is not None:
                return finished
            self.plan_from(item)
        return self.pipeline.outcome(job)

    def plan_from(self, first: CaseItem) -> None:
        """Tell the pipeline which items this process runs, from ``first`` on, in order.
        Decided once per process, at its first item that the store does not finish."""
        if self.planning_done:
            return
        self.planning_done = True
        items = [i for i in first.session.items if isinstance(i, CaseItem)]
        workerinput = getattr(self.config, "workerinput", None)
        if workerinput is not None:
            if not workerinput.get("imagetime_shares"):
                return  # another xdist scheduling: this worker cannot know its items ahead
            workers = int(workerinput["workercount"])
            share = share_of(items.index(first), workers)
            items = [item for n, item in enumerate(items) if share_of(n, workers) == share]
        start = items.index(first)
        self.pipeline.plan([item.job() for item in items[start:]])

    # First: under xdist every report has arrived once the test loop ends, and the reports
    # are then written while the workers shut down (xdist's own hook waits for them).
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self._pipeline is not None:
            self._pipeline.close()
        for run in self.runs.values():
            close = getattr(run.model, "close", None)
            if callable(close):
                close()
        if _is_xdist_worker(self.config):
            return
        if any(self.records.values()):
            self._write_reports()
        if any(result.breached for result in self.gate_results):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.options.update_baseline and self.options.baseline is not None:
            from .report.json_report import write_report

            for path, report in self.reports:
                spec = next(s for s in self.runs.values() if s.paths.report == path)
                target = self._baseline_path(spec)
                assert target is not None
                write_report(target, report)
        if self.options.html is not None and self.reports:
            self._write_html(self.options.html)
        self._write_galleries()
        if self.options.junit is not None and self.reports:
            from .report.junit import write_junit_items

            write_junit_items(self.options.junit, [report["items"] for _, report in self.reports],
                              self.messages)
        # Everything is written: only the summary's part of each report stays, so the end of
        # the session (other plugins' summaries, their imports) reuses the items' memory.
        self.reports = [(path, {k: v for k, v in report.items() if k != "items"})
                        for path, report in self.reports]

    def _write_reports(self) -> None:
        """Each run's report of the items this session ran, compared with its baseline."""
        from .gate import compare, gate_json
        from .report.json_report import items_of, report_of_items, write_report
        from .runner import now

        created = now()
        for spec in self.runs.values():
            records = self.records.pop(str(spec.paths.run_dir), None)
            if not records:
                continue
            # The last report of this run lends its intervals if its scores are these.
            previous = read_json(spec.paths.report)  # None when there is none
            manifest = self._manifest(spec, records)
            # The records become the report's items (and leave memory as they do): the
            # HTML links and the JUnit file below are made from those items.
            report = report_of_items(manifest, items_of(records), created,
                                     previous if isinstance(previous, dict) else None)
            if self.canaries is not None:
                report["canaries"] = self.canaries
            baseline = self.baselines.get(str(spec.paths.run_dir))
            if baseline is not None:
                result = compare(baseline, report, self.options.max_drop, self.options.floors,
                                 self.options.gate_significant,
                                 self.options.allow_judge_change, run=_run_label(spec))
                self.gate_results.append(result)
                report["gate"] = gate_json(result)
            self.config.hook.pytest_imagetime_update_report(report=report, config=self.config)
            write_report(spec.paths.report, report)
            self.reports.append((spec.paths.report, report))

    def _write_galleries(self) -> None:
        for spec in self.runs.values():
            if spec.judged:
                continue
            from .report.gallery import write_gallery  # only runs of dense grids have one

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
        from .report.html import case_url, run_pages, write_html

        run_dirs = [path.parent for path, _ in self.reports]
        write_html(run_dirs, folder)
        for (_, report), page in zip(self.reports, run_pages(run_dirs), strict=True):
            for item in report["items"]:
                if item["status"] != "passed":
                    link = f"case page: {(folder / case_url(page, item['case_id']))}"
                    text = self.messages.get(item["key"], item["error"] or "")
                    self.messages[item["key"]] = f"{text}\n{link}" if text else link

    def _manifest(self, spec: RunSpec, records: list[ItemRecord]) -> dict[str, Any]:
        from .report.json_report import case_set

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
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if _is_xdist_worker(self.config):
            return
        tr = terminalreporter
        if self.item_errors and not getattr(tr, "no_summary", False):
            tr.write_sep("=", "ImageTime item errors")
            for line in error_summary_lines(self.item_errors, per_item=tr.hasopt("E")):
                tr.write_line(line)
        for gallery in self.galleries:
            tr.write_line(f"dense-grid gallery (qualitative, not scored): {gallery}")
        if not self.reports:
            return
        from .gate import gate_lines
        from .report.summary import summary_lines

        tr.write_sep("=", "ImageTime summary")
        for line in summary_lines([report for _, report in self.reports]):
            tr.write_line(line)
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


class OneLineItemErrors:
    """Lists each item error on one line (``ImagetimeSession.pytest_terminal_summary``), in
    place of pytest's ERRORS section and short summary lines of the same items, with a count
    of each reason: 750 items that fail alike then read as one reason, not 2,250 lines."""

    def __init__(self, session: ImagetimeSession) -> None:
        self.session = session

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        errors = terminalreporter.stats.get("error")
        config = terminalreporter.config
        ours = {e.nodeid for e in self.session.item_errors}
        if not errors or not ours or getattr(terminalreporter, "no_summary", False):
            return (yield)
        every = list(errors)
        # Out of pytest's sight only while it writes its sections; its counts see them all.
        errors[:] = [r for r in every
                     if not (r.when == "setup" and _cwd_relative(config, r.nodeid) in ours)]
        try:
            return (yield)
        finally:
            errors[:] = every


def _cwd_relative(config: pytest.Config, nodeid: str) -> str:
    """The node id as pytest prints it: its file relative to the working directory."""
    path, sep, rest = nodeid.partition("::")
    if config.invocation_params.dir == config.rootpath or not path:
        return nodeid
    relative = os.path.relpath(config.rootpath / path, config.invocation_params.dir)
    return f"{Path(relative).as_posix()}{sep}{rest}"


def _run_label(spec: RunSpec) -> str:
    return f"{with_setting(spec.model.name, spec.setting, spec.grid)} | {spec.judge.name}"


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


class CaseFile(PlainFailures, pytest.File):
    """A YAML case file: one item per case and model."""

    plain_failures = (CaseFileError,)

    def collect(self) -> Iterator[CaseItem]:
        session: ImagetimeSession = self.config.stash[session_key]
        display = self.nodeid or self.path.name
        cases = load_case_file(self.path, display=display)
        session.claim_case_ids(self.path, display, cases)
        for case in cases:
            for spec, run in session.runs.items():
                name = f"{case.id}[{with_setting(spec, run.setting, run.grid)}]"
                yield CaseItem.from_parent(self, name=name, case=case, run=run)



def base_record(case: Case, run: RunSpec) -> ItemRecord:
    """What an item's record holds before its outcome is known."""
    from .record import ItemRecord

    return ItemRecord(
        key=f"{case.id}[{with_setting(run.model.name, run.setting, run.grid)}]",
        case_id=case.id,
        case_file=Path(case.source).name, domain=case.domain, subcategory=case.subcategory,
        concept=case.concept, difficulty=case.difficulty, variant=case.variant,
        probed_levels=case.levels, constraint=case.applicable.constraint,
        model=run.model.name, judge=run.judge.name, setting=run.setting,
        run_dir=str(run.paths.run_dir), image=str(run.paths.image(case.id)),
        case_sha256=case.spec_hash,
    )


class ConditionsNotMet(AssertionError):
    """Benchmark conditions the sheet does not meet: a test failure, not an error."""


class CaseItem(PlainFailures, pytest.Item):
    """One case x model: setup generates and judges, the call asserts the conditions."""

    plain_failures = (ConditionsNotMet, ItemError)

    def __init__(self, *, case: Case, run: RunSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.run = run
        self.outcome: ItemOutcome | None = None
        self.sheet: Sheet | None = None  # a dense grid's sheet: shown, never judged
        self._job: Job | None = None
        self._record: ItemRecord | None = None  # this item's record, until its teardown
        self._add_markers()

    def _add_markers(self) -> None:
        marks = ["imagetime", f"imagetime_{self.case.difficulty}",
                 f"imagetime_domain_{slug(self.case.domain)}"]
        marks += [f"imagetime_{level}" for level in self.case.levels]
        marks += [f"imagetime_{flag}" for flag in ("constraint", "quantity", "occlusion")
                  if getattr(self.case.applicable, flag)]
        domain = self.case.domain
        self.config.stash[session_key].markers.add(
            self, marks, lambda name: f"ImageTime items of domain {domain}")

    def base_record(self) -> ItemRecord:
        return base_record(self.case, self.run)

    def job(self) -> Job:
        if self._job is None:  # asked for when the pipeline is planned, and again at setup
            from .pipeline import Job

            self._job = Job(self.nodeid, self.run, self.case, self.base_record())
        return self._job

    def setup(self) -> None:
        from .runner import ItemOutcome, Sheet

        session: ImagetimeSession = self.config.stash[session_key]
        if not self.run.judged:
            result = session.result_for(self)
            assert isinstance(result, Sheet)
            self.sheet = result
            return
        base = self.job().base
        try:
            result = session.result_for(self)
        except ItemError as exc:
            self._set_record(base.with_status("error", str(exc)))
            raise
        except BaseException:  # still reported, as an error of this case
            self._set_record(base)
            raise
        assert isinstance(result, ItemOutcome)
        self.outcome = result
        self._set_record(result.record)

    def _set_record(self, record: ItemRecord) -> None:
        self._record = record

    def teardown(self) -> None:
        # The record travels in user_properties, set here so that only the teardown report
        # carries them (pytest copies them into every report, and xdist sends each one);
        # what it was made from (the judgment, its raw answer, the caps) is let go.
        if self._record is not None:
            kept = [(k, v) for k, v in self.user_properties if not k.startswith("imagetime.")]
            kept.extend(self._record.to_properties())
            self.user_properties[:] = kept
            self._record = None
        self.outcome = None
        self.sheet = None
        self._job = None

    def runtest(self) -> None:
        if self.sheet is not None:  # a dense grid: one square image is all it must be
            width, height = self.sheet.image.size
            if width != height:
                raise ConditionsNotMet(f"{self.case.id}: the dense grid is {width}x{height}, "
                                       f"not square")
            return
        from .conditions import explain, unmet_conditions

        assert self.outcome is not None
        threshold = self.config.stash[session_key].options.pass_threshold
        unmet = unmet_conditions(self.case, self.outcome, threshold)
        for extra in self.config.hook.pytest_imagetime_item_conditions(
                case=self.case, outcome=self.outcome, config=self.config):
            unmet.extend(extra or [])
        if unmet:
            raise ConditionsNotMet(explain(self.case, self.outcome, unmet))


    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = None if self.case.line is None else self.case.line - 1
        return self.path, line, f"{self.case.id} [{self.run.model.name}]"
