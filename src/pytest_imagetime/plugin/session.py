"""An active ImageTime session: collection of case files, the item, and reporting glue.

Imported by the plugin (``plugin.py``) only when a run asks for a model, so that a test
session that does not use the benchmark never imports the backends, numpy or the reports.
Workers under xdist run items; only the controller writes reports.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
from collections.abc import Generator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..backends.registry import JUDGES, UnknownBackend
from ..cases.inventory import slug
from ..cases.loading import (
    Case,
    CaseFileError,
    Problem,
    builtin_cases_dir,
    load_case_file,
    looks_like_case_file,
)
from ..engine.item_error import ItemError
from ..engine.run_spec import RunSpec
from ..models.own_process import OwnProcessModel, factory_of, may_draw_in_own_process
from ..rubric.facts import LEVEL_KEYS, RUBRIC_VERSION
from ..store.run_dir import RunPaths, read_json, with_setting
from ..store.run_lock import FolderClaims
from .error_summary import ItemErrorLine
from .error_summary import summary_lines as error_summary_lines
from .failure_text import PlainFailures, report_text
from .markers import Markers
from .options import Options, for_session
from .progress import Progress
from .registered_models import session_models
from .replay import item_can_replay, replay, session_can_replay
from .scheduling import is_case_nodeid, keep_limited, shard_cases, share_of

if TYPE_CHECKING:
    from ..report.coverage import Suite

# What runs items (runner, pipeline, records, conditions) and what reports on them (reports,
# gate) is imported when first used: a session that only collects (--collect-only, a dry
# run, a -k selection that leaves nothing) never loads them, nor Pillow and numpy.
if TYPE_CHECKING:
    from ..engine.pipeline import Job, Pipeline, Result
    from ..engine.record import ItemRecord
    from ..engine.references import References
    from ..engine.runner import ItemOutcome, Sheet
    from ..gate.compare import GateResult
    from ..judges.base import Judge
    from ..models.base import ImageModel
    from ..report.pytest_junit import PytestJunit

PLUGIN_NAME = "imagetime-session"
# The options that decide what a case's rerun draws, judges and asserts.
RERUN_OPTIONS = ("judge", "setting", "grid", "size", "seed", "pass-threshold", "out",
                 "judge-model", "judge-base-url", "judge-key-env", "judge-repeats",
                 "reference-dir", "reference-model", "model-base-url", "model-key-env")
session_key = pytest.StashKey["ImagetimeSession"]()


def start(config: pytest.Config, options: Options) -> None:
    """Set up the session of a run that asks for a model (``options.active``)."""
    if options.dry_run:
        # A dry run only counts: no workers to start (before xdist's own configure runs).
        config.option.dist = "no"
        config.option.numprocesses = None
    options = for_session(config, options)
    register_markers(config)
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
    else:
        config.args = [packaged_argument(arg, config.invocation_params.dir)
                       for arg in config.args]


def packaged_argument(arg: str, here: Path) -> str:
    """A path or node id of a packaged case file, as runs print them (``kitchen.yaml::ID[M]``,
    ``cases/kitchen.yaml``), made to name the packaged file when no such file is here: the
    node ids a run prints then work in any directory, not only in a source checkout."""
    path, sep, rest = arg.partition("::")
    if not path.endswith((".yaml", ".yml")) or (here / path).exists():
        return arg
    name = Path(path)
    if len(name.parts) == 2 and name.parts[0] == "cases":
        name = Path(name.name)
    if len(name.parts) != 1:
        return arg
    packaged = builtin_cases_dir() / name
    return f"{packaged}{sep}{rest}" if packaged.is_file() else arg


def _check_outputs(config: pytest.Config, options: Options) -> None:
    """Refuse output paths that cannot be written before any item runs (a session that
    writes nothing, collecting only or a dry run, is let be)."""
    if options.dry_run or config.option.collectonly:
        return
    from ..store.writable import UnwritablePath, check_run_outputs

    try:
        check_run_outputs(options.out, options.junit, options.html,
                          getattr(config.option, "xmlpath", None))
    except UnwritablePath as exc:
        raise pytest.UsageError(str(exc)) from None


def register_markers(config: pytest.Config) -> None:
    from ..cases.inventory import domains

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
        if options.judge_batch:
            judge = self._batch_judge(config, options, judge)
        self.judge = judge
        self.runs: dict[str, RunSpec] = {}
        references = self._references(options)
        for spec in options.models:
            model: ImageModel = _resolve("model", spec, session_models(config),
                                         options=options.model_options)
            _check_model_fits(spec, model, options)
            choice = options.model_options.process
            if may_draw_in_own_process(model, choice):
                model = OwnProcessModel(factory_of(session_models(config), spec,
                                                   options.model_options), model, choice)
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
        self.estimate_printed = False  # a dry run printed its estimate: it exits 0
        self.replays = session_can_replay(config)
        # What the store gave an item that the protocol looked up before its setup.
        self._looked_up: dict[str, Result | None] = {}
        self.markers = Markers(config)
        self.gate_results: list[GateResult] = []
        self.retired_baselines: list[Path] = []
        self._baseline_found: dict[str, Path] = {}  # the report each run is gated on
        self.baselines = self._load_baselines()
        self.progress = Progress(options.progress_every_s, self._write_line)
        self._outcomes: dict[str, tuple[str, str]] = {}
        self.records: dict[str, list[ItemRecord]] = {}
        self.messages: dict[str, str] = {}
        self.reports: list[tuple[Path, dict[str, Any]]] = []
        self.galleries: list[Path] = []
        self._pytest_junit: PytestJunit | None = None  # known once every plugin is configured
        # Case files this process collected: the suite reuses them instead of loading again.
        self.collected_files: dict[Path, tuple[Case, ...]] = {}
        self._ran_keys: set[str] = set()  # items this session ran: its JUnit file's
        self._selection_checked = False
        self.claims = FolderClaims()  # the model folders this session writes
        self._case_files: dict[str, tuple[Path, str, int | None]] = {}  # by case id
        self.item_errors: list[ItemErrorLine] = []  # shown by OneLineItemErrors

    @functools.cached_property
    def suite(self) -> Suite:
        """Every case of the case files this run collects from, before -k, -m, --lf or a
        shard select some."""
        from ..report.coverage import suite_of

        return suite_of(self.config.args, self.config.invocation_params.dir,
                        self.collected_files)

    def _batch_judge(self, config: pytest.Config, options: Options, judge: Judge) -> Judge:
        """The judge of ``--imagetime-judge-batch``; its mistakes are caught here, before
        anything is drawn."""
        import time

        from ..judges.batch import BatchFailure, BatchJudge
        from ..judges.vlm import VlmJudge

        def refuse(why: str) -> pytest.UsageError:
            return pytest.UsageError(f"--imagetime-judge-batch: {why}")

        if type(judge) is not VlmJudge:
            raise refuse(f"batches judge with the vlm judge only, not "
                         f"--imagetime-judge={options.judge}")
        if options.max_cost is not None:
            raise refuse("a batch is paid when it ends, so --imagetime-max-cost cannot stop "
                         "it; see its estimate with --imagetime-dry-run instead")
        if options.regenerate:
            raise refuse("--imagetime-regenerate would draw every sheet again after its "
                         "batch judged it; regenerate in a run of its own first")
        if config.getoption("dist", "no") not in ("no", "load"):
            raise refuse("under pytest-xdist each worker batches its own share of the items, "
                         "which needs the default distribution (-n N, --dist load)")
        batch = BatchJudge(judge, options.out / "batches", options.judge_batch_poll_s,
                           self._write_line, options.progress_every_s,
                           ignore_before=time.time() if options.rejudge else None)
        if not options.dry_run and not _is_xdist_worker(config):
            try:
                batch.check()
            except BatchFailure as exc:
                raise refuse(str(exc)) from None
        return batch

    @property
    def pipeline(self) -> Pipeline:
        """The pipeline of this process's items, made when the first item asks for it."""
        if self._pipeline is None:
            from ..engine.pipeline import CostBudget, Pipeline, model_concurrency

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
        from ..engine.references import GeneratedReferences, ReferenceDir
        from ..engine.runner import case_seed

        if options.reference_dir is not None:
            return ReferenceDir(options.reference_dir)
        assert options.reference_model is not None  # parse_options demands one of the two
        model: ImageModel = _resolve("reference-model", options.reference_model,
                                     session_models(self.config), options=options.model_options)
        return GeneratedReferences(model, options.out, options.size,
                                   functools.partial(case_seed, options.seed))

    # ------------------------------------------------------------ collection

    def pytest_collect_file(self, file_path: Path,
                            parent: pytest.Collector) -> pytest.Collector | None:
        if file_path.suffix not in (".yaml", ".yml"):
            return None
        if parent.session.isinitpath(file_path) or looks_like_case_file(file_path):
            nodeid = _packaged_nodeid(file_path, self.config.rootpath)
            if nodeid is None:
                return CaseFile.from_parent(parent, path=file_path)
            return CaseFile.from_parent(parent, path=file_path, nodeid=nodeid)
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        if self.baselines:
            self._mark_known_failures(items)
        limited = (None if self.options.limit is None
                   else keep_limited(config, items, self.options.limit))
        if self.options.shard is not None:
            # A share of the suite, not of the selection: shard K is the same cases whatever
            # -k or --lf keeps, so its reruns and its merge agree on what it covers.
            kept = shard_cases(list(self.suite.cases if limited is None else limited),
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
        from ..engine.estimate import estimate, estimate_lines

        ours = [i for i in items if isinstance(i, CaseItem)]
        estimates = [estimate(run, [i.case for i in ours if i.run is run],
                              batch=self.options.judge_batch)
                     for run in self.runs.values()]
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "ImageTime dry run")
            for line in estimate_lines(estimates, self.judge.config()):
                reporter.write_line(line)
        config.hook.pytest_deselected(items=list(items))
        items[:] = []
        self.estimate_printed = True

    def claim_folders(self) -> None:
        """Claim each model folder this session writes (``run_lock.py``): a live session
        writing it with other settings is refused here, before any item runs. Then remove
        what killed runs left there half written."""
        from ..store.run_dir import input_key, remove_abandoned_temporaries
        from ..store.run_lock import SettingsConflict

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
        from ..report.pytest_junit import pytest_junit_of

        self._pytest_junit = pytest_junit_of(self.config)
        if self.options.canaries and self.options.judge_options.calls \
                and not _is_xdist_worker(self.config):
            from ..engine.canaries import run_canaries  # draws sheets: numpy only when asked for

            # Judged at once, before the items: through the judge a batch wraps.
            judge = getattr(self.judge, "inner", self.judge)
            self.canaries = run_canaries(judge, self.options.setting)

    # ------------------------------------------------------------ results (controller)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        if call.when == "setup" and call.excinfo is not None \
                and call.excinfo.errisinstance(ItemError):
            report.longrepr = f"{item.nodeid}: {call.excinfo.value}"
            if isinstance(item, CaseItem):
                report.longrepr += f"\n  rerun alone: {item.rerun_command()}"
        return report

    # First: pytest's own JUnit file takes a case's properties from its teardown report.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if _is_xdist_worker(self.config):
            return
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
        from ..engine.record import ItemRecord

        selected = self._selected_in([report.nodeid])
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
        from ..engine.record import ItemRecord

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
        if self._pytest_junit is not None:
            from ..report.junit import case_output

            self._pytest_junit.case(report, "imagetime.", record.to_properties(),
                                    case_output(record, self.config.invocation_params.dir))
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
        """Where this run's baseline is written: the report file given, or the run's own
        place in the baseline directory."""
        base = self.options.baseline
        if base is None:
            return None
        if base.suffix == ".json" or base.is_file():
            return base
        return base / spec.paths.run_dir.relative_to(self.options.out) / "report.json"

    def _find_baseline(self, spec: RunSpec) -> Path | None:
        """The report this run is gated on: its own, or the baseline directory's one run of
        its judge and setting whatever its model is called (a new checkpoint's new spec)."""
        from ..gate.baseline_runs import AmbiguousBaseline, baseline_report

        base = self.options.baseline
        own = self._baseline_path(spec)
        if base is None or own is None or own == base:
            return own
        try:
            return baseline_report(base, spec.paths.run_dir.relative_to(self.options.out),
                                   spec.setting)
        except AmbiguousBaseline as exc:
            if self.options.update_baseline:
                return None  # being written now: nothing to compare with
            raise pytest.UsageError(f"--imagetime-baseline={base}: {exc}; "
                                    f"{exc.how_to_pick('--imagetime-baseline={report}')}") from None

    def _load_baselines(self) -> dict[str, dict[str, Any]]:
        """Baseline reports by run directory; a missing one is an error unless it is being
        written now."""
        from ..gate.baseline_runs import judges_present

        found: dict[str, dict[str, Any]] = {}
        base = self.options.baseline
        if base is None:
            return found
        for spec in self.runs.values():
            path = self._find_baseline(spec)
            report = None if path is None else read_json(path)
            if report is None:
                if self.options.update_baseline:
                    continue
                wanted = path or self._baseline_path(spec)
                held = judges_present(base) if base.is_dir() else []
                others = (f"; it holds runs of other judges or settings only: "
                          f"{', '.join(held)}" if held else "")
                raise pytest.UsageError(
                    f"--imagetime-baseline={base}: no readable baseline report "
                    f"at {wanted} for {_run_label(spec)}{others} "
                    f"(--imagetime-update-baseline writes one)")
            found[str(spec.paths.run_dir)] = report
            assert path is not None
            self._baseline_found[str(spec.paths.run_dir)] = path
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
        if self.options.judge_batch:
            self._judge_in_batches(items[start:])
        self.pipeline.plan([item.job() for item in items[start:]])

    def _judge_in_batches(self, items: list[CaseItem]) -> None:
        """Draw or reuse every sheet of these items, then judge them in batches: the items
        find their judgments with the judge (``judges/batch.py``)."""
        from ..judges.batch import BatchJudge

        judge = self.judge
        assert isinstance(judge, BatchJudge)
        self._write_line(f"[imagetime] batch judging: {len(items)} items, every sheet drawn "
                         f"or found first")
        judge.prepare(_sheets_of(items))

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
        if self.estimate_printed and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK  # the dry run did what it was asked
        if self.options.update_baseline and self.options.baseline is not None:
            from ..report.json_report import write_report

            for path, report in self.reports:
                spec = next(s for s in self.runs.values() if s.paths.report == path)
                target = self._baseline_path(spec)
                assert target is not None
                write_report(target, report)
                self._retire_superseded_baseline(spec, target)
        if self.options.html is not None and self.reports:
            self._write_html(self.options.html)
        self._write_galleries()
        if self.options.junit is not None and self.reports:
            from ..report.junit import write_junit_items
            from ..report.pytest_junit import junit_family

            # The items this session ran: a report also holds those it kept from earlier runs.
            ran = self._ran_keys
            write_junit_items(self.options.junit,
                              [[i for i in report["items"] if i["key"] in ran]
                               for _, report in self.reports], self.messages,
                              case_properties=junit_family(self.config) == "xunit1",
                              reports=[report for _, report in self.reports],
                              root=self.config.invocation_params.dir)
        if self._pytest_junit is not None:
            from ..report.junit import pytest_suite_properties

            self._pytest_junit.suite_properties(
                pytest_suite_properties([report for _, report in self.reports]))
        # Everything is written: only the summary's part of each report stays, so the end of
        # the session (other plugins' summaries, their imports) reuses the items' memory.
        self.reports = [(path, {k: v for k, v in report.items() if k != "items"})
                        for path, report in self.reports]

    def _retire_superseded_baseline(self, spec: RunSpec, written: Path) -> None:
        """A candidate gated on another model's run of the baseline directory replaces it
        there: the directory keeps one run of the judge, so the next checkpoint finds it."""
        found = self._baseline_found.get(str(spec.paths.run_dir))
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
        from ..engine.runner import now
        from ..gate.compare import compare, gate_json
        from ..report.coverage import coverage_json, kept_items
        from ..report.json_report import case_set_of_items, items_of, report_of_items, write_report
        from ..report.scores_csv import write_run_records

        created = now()
        suite = self.suite
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
            baseline = self.baselines.get(str(spec.paths.run_dir))
            if baseline is not None:
                result = compare(baseline, report, self.options.max_drop, self.options.floors,
                                 self.options.gate_significant,
                                 self.options.allow_judge_change, run=_run_label(spec))
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
        from ..report.html import case_url, run_pages, write_html

        run_dirs = [path.parent for path, _ in self.reports]
        write_html(run_dirs, folder)
        for (_, report), page in zip(self.reports, run_pages(run_dirs), strict=True):
            for item in report["items"]:
                if item["status"] != "passed":
                    link = f"case page: {(folder / case_url(page, item['case_id']))}"
                    text = self.messages.get(item["key"], item["error"] or "")
                    self.messages[item["key"]] = f"{text}\n{link}" if text else link

    def _manifest(self, spec: RunSpec, records: list[ItemRecord]) -> dict[str, Any]:
        from ..report.json_report import case_set

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
        if _is_xdist_worker(self.config):
            return
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


def _packaged_nodeid(path: Path, rootpath: Path) -> Any:
    """A packaged case file outside the rootdir is ``<file name>`` however it was named (the
    packaged directory, or the file itself): node ids stay the same, and resolve anywhere
    (``packaged_argument``). None for every other file: pytest's own id."""
    if path.is_relative_to(rootpath):
        return None
    try:
        relative = path.relative_to(builtin_cases_dir()).as_posix()
    except ValueError:
        return None
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2 takes only a NodeId here
    except ImportError:
        return relative
    return NodeId(path=relative)


def _report_name(report: dict[str, Any]) -> str:
    manifest = report["manifest"]
    return with_setting(str(manifest["model"]["spec"]), manifest["setting"])


def _sheets_of(items: list[CaseItem]) -> Iterator[tuple[RunSpec, Case, Sheet]]:
    """Each item's sheet, stored or drawn (and stored) here: in batches of the backend's
    batch size, several at once for a hosted backend. Items that cannot have one are left
    out: each reports why when it runs."""
    from concurrent.futures import ThreadPoolExecutor

    from ..engine.pipeline import model_concurrency
    from ..engine.runner import Sheet, generate_sheets

    by_run: dict[int, list[CaseItem]] = {}
    for item in items:
        by_run.setdefault(id(item.run), []).append(item)
    for group in by_run.values():
        run = group[0].run
        size = max(1, run.batch_size)
        chunks = [[i.case for i in group[n:n + size]] for n in range(0, len(group), size)]
        with ThreadPoolExecutor(max_workers=model_concurrency(run)) as pool:
            for cases, sheets in zip(chunks, pool.map(
                    functools.partial(generate_sheets, run), chunks), strict=True):
                for case, sheet in zip(cases, sheets, strict=True):
                    if isinstance(sheet, Sheet):
                        yield run, case, sheet


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


def rerun_command(config: pytest.Config, selection: Sequence[str],
                  specs: Iterable[str]) -> str:
    """``pytest`` with ``selection`` (node ids, or ``--lf``), the models and the options
    that decide what a rerun draws, judges and asserts."""
    from .options import _raw

    words = ["pytest", *selection, *(f"--imagetime-model={spec}" for spec in specs)]
    for name in RERUN_OPTIONS:
        value = _raw(config, name)
        if value is not None:
            words.append(f"--imagetime-{name}={value}")
    return shlex.join(words)


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
        session.collected_files[self.path.resolve()] = cases
        session.claim_case_ids(self.path, display, cases)
        structured = hasattr(self, "id")  # pytest >= 9.2 keeps node ids as NodeId
        for case in cases:
            for spec, run in session.runs.items():
                run_name = with_setting(spec, run.setting, run.grid)
                name = f"{case.id}[{run_name}]"
                if structured:
                    # The model as the id's parameters, as pytest parses "file::case[model]"
                    # back from its cache: --lf and --ff then find the item again.
                    yield CaseItem.from_parent(self, name=name, case=case, run=run,
                                               nodeid=self.id.child(case.id)
                                               .with_params(run_name))
                else:
                    yield CaseItem.from_parent(self, name=name, case=case, run=run)


def base_record(case: Case, run: RunSpec) -> ItemRecord:
    """What an item's record holds before its outcome is known."""
    from ..engine.record import ItemRecord

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
            from ..engine.pipeline import Job

            self._job = Job(self.nodeid, self.run, self.case, self.base_record())
        return self._job

    def setup(self) -> None:
        from ..engine.runner import ItemOutcome, Sheet

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
        from ..rubric.conditions import explain, unmet_conditions

        assert self.outcome is not None
        threshold = self.config.stash[session_key].options.pass_threshold
        unmet = unmet_conditions(self.case, self.outcome, threshold)
        for extra in self.config.hook.pytest_imagetime_item_conditions(
                case=self.case, outcome=self.outcome, config=self.config):
            unmet.extend(extra or [])
        if unmet:
            raise ConditionsNotMet(explain(self.case, self.outcome, unmet))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> Any:
        shown = super().repr_failure(excinfo, style)
        if isinstance(shown, str) and isinstance(excinfo.value, ConditionsNotMet):
            return f"{shown}\n  rerun alone: {self.rerun_command()}"
        return shown

    def rerun_command(self) -> str:
        """A command that runs this case alone with this run's model, judge and scoring, in
        any directory (``packaged_argument``), reusing what the run stored."""
        session: ImagetimeSession = self.config.stash[session_key]
        spec = next(s for s, run in session.runs.items() if run is self.run)
        return rerun_command(self.config, [self.nodeid], [spec])

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = None if self.case.line is None else self.case.line - 1
        return self.path, line, f"{self.case.id} [{self.run.model.name}]"
