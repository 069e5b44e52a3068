"""The session state of a benchmark run, kept in ``config.stash[state_key]``: its runs
(model x judge x setting), its pipeline, the folders it claimed, the case files it collected
and the baselines it is gated on. Every pytest process of a run has one; the controller's
reporter (``reporter.py``) reads it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from ..backends.registry import HOSTED_MODELS, JUDGES, Registry, UnknownBackend
from ..cases.model import Case, CaseFileError, Problem
from ..engine.run_spec import RunSpec
from ..gate.baseline_runs import AmbiguousBaseline, baseline_report, judges_present
from ..models.keys import MissingKey
from ..models.own_process import OwnProcessModel, factory_of, may_draw_in_own_process
from ..store.atomic import read_json, remove_abandoned_temporaries
from ..store.keys import input_key
from ..store.paths import RunPaths, with_setting
from ..store.run_lock import FolderClaims, SettingsConflict
from .markers import Markers
from .options import Options
from .registered_models import session_models
from .replay import session_can_replay
from .scheduling import is_case_nodeid, share_of

# What runs items (runner, pipeline, records) is imported when first used: a session that
# only collects (--collect-only, a dry run, a -k selection that leaves nothing) never loads
# them, nor Pillow and numpy.
if TYPE_CHECKING:
    from ..engine.pipeline import Job, Pipeline
    from ..engine.record import ItemRecord
    from ..engine.references import References
    from ..engine.runner import Drawn, ItemOutcome, Sheet
    from ..judges.base import Judge
    from ..models.base import ImageModel
    from ..report.coverage import Suite
    from .collect import CaseItem

    CaseJob = Job[RunSpec, Case, ItemRecord]
    CasePipeline = Pipeline[RunSpec, Case, ItemRecord, Sheet, Drawn, ItemOutcome]
    Result = ItemOutcome | Sheet  # a dense grid (never judged) gets its sheet

state_key = pytest.StashKey["ImagetimeState"]()
T = TypeVar("T")


def is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _create_backend(kind: str, spec: str, registry: Any, *, several_hosted: bool = False,
                    **context: Any) -> Any:
    """The backend ``spec`` names; a usage error naming the option when it cannot be made.
    ``several_hosted``: the run has several hosted backends, so a missing key's message does
    not send the user to the option that names one variable for all of them."""
    try:
        return registry.create(spec, **context)
    except MissingKey as exc:
        raise pytest.UsageError(
            f"--imagetime-{kind}={spec}: {exc.worded(several=several_hosted)}") from None
    except (UnknownBackend, ValueError, ImportError) as exc:
        raise pytest.UsageError(f"--imagetime-{kind}={spec}: {exc}") from None


def _noting_problem(problems: list[str], make: Callable[[], T]) -> T | None:
    """What ``make`` returns; None, with its usage error's lines added to ``problems``, when
    it refuses: the start-up reports every backend's problem at once."""
    try:
        return make()
    except pytest.UsageError as exc:
        problems.extend(str(line) for line in exc.args)
        return None


def _hosted_backends(registry: Registry, specs: Iterable[str]) -> set[str]:
    """The built-in hosted backends these model specs name (--imagetime-model-key-env and
    --imagetime-model-base-url apply to every one of them)."""
    names = (registry.resolve(spec.partition(":")[0].strip()) for spec in specs)
    return {name for name in names if name in HOSTED_MODELS}


def _model_specs(options: Options) -> list[str]:
    """Every model spec the run builds: its models and the one that draws its references."""
    drawn_references = options.setting == "scaffold" and options.reference_dir is None
    return [*options.models, *([options.reference_model]
                               if drawn_references and options.reference_model else [])]


def _check_model_fits(spec: str, model: ImageModel, options: Options) -> None:
    if options.setting == "scaffold" and not model.accepts_reference:
        raise pytest.UsageError(
            f"--imagetime-model={spec}: this backend cannot complete a scaffold (it takes no "
            f"reference image); the scaffold setting needs an edit-capable backend: "
            f"flux-kontext, qwen-image-edit, flux2-dev, openai-images, "
            f"diffusers:REPO:edit=true, or a third-party backend with accepts_reference")


class ImagetimeState:
    """What one pytest process of a run keeps: resolved backends, its items' pipeline."""

    def __init__(self, config: pytest.Config, options: Options) -> None:
        self.config = config
        self.options = options
        problems: list[str] = []  # every backend's, reported together before anything runs
        made_judge: Judge | None = _noting_problem(problems, lambda: _create_backend(
            "judge", options.judge, JUDGES, options=options.judge_options))
        if made_judge is not None and options.judge_batch:
            made_judge = self._batch_judge(config, options, made_judge)
        several_hosted = len(_hosted_backends(session_models(config),
                                              _model_specs(options))) > 1
        references = _noting_problem(problems, lambda: self._references(options,
                                                                        several_hosted))
        models = {spec: _noting_problem(problems, functools.partial(
            self._model, spec, several_hosted)) for spec in options.models}
        if problems:
            raise pytest.UsageError(*problems)
        assert made_judge is not None
        self.judge = judge = made_judge
        self.runs: dict[str, RunSpec] = {}
        for spec, model in models.items():
            assert model is not None
            paths = RunPaths(options.out, model.name, judge.name, options.setting, options.grid)
            self.runs[spec] = RunSpec(model=model, judge=judge, paths=paths,
                                      setting=options.setting, size=options.size,
                                      run_seed=options.seed, regenerate=options.regenerate,
                                      rejudge=options.rejudge, repeats=options.judge_repeats,
                                      grid=options.grid, references=references,
                                      batch_size=options.model_options.batch_size)
        workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
        budget = None if options.max_cost is None else options.max_cost / workers
        if budget is not None and judge.calls_a_model and judge.price is None:
            raise pytest.UsageError(
                f"--imagetime-max-cost needs the judge's price, and none is known for "
                f"{judge.config().get('judge_model')!r}: give --imagetime-judge-price=IN,OUT "
                "(USD per 1M tokens)")
        self._budget = budget
        self._pipeline: CasePipeline | None = None
        self.planning_done = False
        self.estimate_printed = False  # a dry run printed its estimate: it exits 0
        self.replays = session_can_replay(config)
        # What the store gave an item that the protocol looked up before its setup.
        self.looked_up: dict[str, Result | None] = {}
        self.markers = Markers(config)
        self.baseline_found: dict[str, Path] = {}  # the report each run is gated on
        self.baselines = self._load_baselines()
        # Case files this process collected: the suite reuses them instead of loading again.
        self.collected_files: dict[Path, tuple[Case, ...]] = {}
        self.claims = FolderClaims()  # the model folders this session writes
        self._case_files: dict[str, tuple[Path, str, int | None]] = {}  # by case id
        self.case_items: list[CaseItem] = []  # this process's items, in pytest's order

    @functools.cached_property
    def suite(self) -> Suite:
        """Every case of the case files this run collects from, before -k, -m, --lf or a
        shard select some."""
        from ..report.coverage import suite_of  # reports load once the items are known

        return suite_of(self.config.args, self.config.invocation_params.dir,
                        self.collected_files)

    def _batch_judge(self, config: pytest.Config, options: Options, judge: Judge) -> Judge:
        """The judge of ``--imagetime-judge-batch``; its mistakes are caught here, before
        anything is drawn."""
        # The batch judge and the vlm judge's client load only for --imagetime-judge-batch.
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
                           self.write_line, options.progress_every_s,
                           ignore_before=time.time() if options.rejudge else None)
        if not options.dry_run and not is_xdist_worker(config):
            try:
                batch.check()
            except BatchFailure as exc:
                raise refuse(str(exc)) from None
        return batch

    @property
    def pipeline(self) -> CasePipeline:
        """The pipeline of this process's items, made when the first item asks for it."""
        if self._pipeline is None:
            # The engine loads at the first item: a session that only collects never needs it.
            from ..engine.pipeline import CostBudget, Pipeline, model_concurrency
            from ..engine.runner import ImagetimeSuite

            concurrency = self.options.judge_options.concurrency
            drawing = max((model_concurrency(run) for run in self.runs.values()), default=1)
            # Room for a whole batch, and for every hosted request in flight, on top of the
            # sheets waiting for a judge.
            lookahead = max(2 * concurrency, 2 * self.options.model_options.batch_size,
                            2 * drawing)
            self._pipeline = Pipeline(ImagetimeSuite(), concurrency=concurrency,
                                      lookahead=lookahead, budget=CostBudget(self._budget),
                                      generation_concurrency=drawing)
        return self._pipeline

    def _model(self, spec: str, several_hosted: bool) -> ImageModel:
        """The model of ``--imagetime-model=spec``, checked against the setting; in a child
        process of its own where it draws there."""
        options = self.options
        registry = session_models(self.config)
        model: ImageModel = _create_backend("model", spec, registry,
                                            several_hosted=several_hosted,
                                            options=options.model_options)
        _check_model_fits(spec, model, options)
        choice = options.model_options.process
        if may_draw_in_own_process(model, choice):
            model = OwnProcessModel(factory_of(registry, spec, options.model_options), model,
                                    choice)
        return model

    def _references(self, options: Options, several_hosted: bool) -> References | None:
        if options.setting != "scaffold":
            return None
        # Only the scaffold setting has references.
        from ..engine.references import GeneratedReferences, ReferenceDir
        from ..engine.runner import case_seed

        if options.reference_dir is not None:
            return ReferenceDir(options.reference_dir)
        assert options.reference_model is not None  # parse_options demands one of the two
        model: ImageModel = _create_backend("reference-model", options.reference_model,
                                            session_models(self.config),
                                            several_hosted=several_hosted,
                                            options=options.model_options)
        return GeneratedReferences(model, options.out, options.size,
                                   functools.partial(case_seed, options.seed))

    # ------------------------------------------------------------ collection


    def claim_folders(self) -> None:
        """Claim each model folder this session writes (``run_lock.py``): a live session
        writing it with other settings is refused here, before any item runs. Then remove
        what killed runs left there half written."""
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

    def check_selection(self, selected: list[tuple[RunSpec, str]]) -> None:
        """Refuse a model that can make none of the selected cases (``files:DIR`` without
        a file for any of them) before the first item, where a backend can tell."""
        for spec, run in self.runs.items():
            case_ids = [case_id for of, case_id in selected if of is run]
            if not case_ids:
                continue
            try:
                run.model.check_selection(case_ids=case_ids)
            except ValueError as exc:
                raise pytest.UsageError(f"--imagetime-model={spec}: {exc}") from None


    def close(self) -> None:
        """Stop the pipeline and let the backends go."""
        if self._pipeline is not None:
            self._pipeline.close()
        for run in self.runs.values():
            run.model.close()

    def write_line(self, line: str) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(line)


    def selected_in(self, nodeids: list[str]) -> list[tuple[RunSpec, str]]:
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

    def baseline_path(self, spec: RunSpec) -> Path | None:
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
        base = self.options.baseline
        own = self.baseline_path(spec)
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
                wanted = path or self.baseline_path(spec)
                held = judges_present(base) if base.is_dir() else []
                others = (f"; it holds runs of other judges or settings only: "
                          f"{', '.join(held)}" if held else "")
                raise pytest.UsageError(
                    f"--imagetime-baseline={base}: no readable baseline report "
                    f"at {wanted} for {run_label(spec)}{others} "
                    f"(--imagetime-update-baseline writes one)")
            found[str(spec.paths.run_dir)] = report
            assert path is not None
            self.baseline_found[str(spec.paths.run_dir)] = path
        return found

    def result_for(self, item: CaseItem) -> Result:
        """The item's outcome (its sheet for a dense grid); raises ItemError on failure.
        Until the first item that the store does not finish, each is finished here."""
        job = item.job()
        if not self.planning_done:
            if item.nodeid in self.looked_up:
                finished = self.looked_up.pop(item.nodeid)
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
        items = self.case_items
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
        from ..judges.batch import BatchJudge  # only --imagetime-judge-batch gets here

        judge = self.judge
        assert isinstance(judge, BatchJudge)
        self.write_line(f"[imagetime] batch judging: {len(items)} items, every sheet drawn "
                        f"or found first")
        judge.prepare(_drawn_or_stored_sheets(items))


def run_label(spec: RunSpec) -> str:
    return f"{with_setting(spec.model.name, spec.setting, spec.grid)} | {spec.judge.name}"


def _drawn_or_stored_sheets(items: list[CaseItem]) -> Iterator[tuple[RunSpec, Case, Sheet]]:
    """Each item's sheet, stored or drawn (and stored) here: in batches of the backend's
    batch size, several at once for a hosted backend. Items that cannot have one are left
    out: each reports why when it runs."""
    from concurrent.futures import ThreadPoolExecutor  # batch judging only

    # Batch judging only: the engine is loaded by then, these find it in sys.modules.
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
