"""Collection of the ImageTime suite: case files become items (one per case x run), and the
item that draws, judges and asserts through the engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..cases.inventory import slug
from ..cases.loading import builtin_cases_dir, load_case_file, looks_like_case_file
from ..cases.model import Case, CaseFileError
from ..engine.item_error import ItemError
from ..engine.run_spec import RunSpec
from ..store.paths import with_setting
from .failure_text import PlainFailures
from .rerun import rerun_command
from .scheduling import keep_limited, shard_cases
from .state import ImagetimeState, is_xdist_worker, state_key

if TYPE_CHECKING:
    from ..engine.record import ItemRecord
    from ..engine.runner import ItemOutcome, Sheet
    from .state import CaseJob


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


class CaseCollection:
    """The collection hooks of a benchmark run, in every process."""

    def __init__(self, state: ImagetimeState) -> None:
        self.state = state
        self.config = state.config
        self.options = state.options

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
        state = self.state
        if state.baselines:
            self._mark_known_failures(items)
        limited = (None if self.options.limit is None
                   else keep_limited(config, items, self.options.limit))
        if self.options.shard is not None:
            # A share of the suite, not of the selection: shard K is the same cases whatever
            # -k or --lf keeps, so its reruns and its merge agree on what it covers.
            kept = shard_cases(list(state.suite.cases if limited is None else limited),
                               self.options.shard)
            others = [i for i in items if isinstance(i, CaseItem) and i.case.id not in kept]
            if others:
                config.hook.pytest_deselected(items=others)
                items[:] = [i for i in items if not isinstance(i, CaseItem)
                            or i.case.id in kept]
        if not config.option.collectonly and not is_xdist_worker(config):
            # Under xdist the controller checks, as the workers' collections arrive.
            state.check_selection([(i.run, i.case.id) for i in items if isinstance(i, CaseItem)])
        if not self.options.dry_run:
            return
        # The estimate imports the runner's keys: only a dry run needs them at collection.
        from ..engine.estimate import estimate, estimate_lines

        ours = [i for i in items if isinstance(i, CaseItem)]
        estimates = [estimate(run, [i.case for i in ours if i.run is run],
                              batch=self.options.judge_batch)
                     for run in state.runs.values()]
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "ImageTime dry run")
            for line in estimate_lines(estimates, state.judge.config()):
                reporter.write_line(line)
        config.hook.pytest_deselected(items=list(items))
        items[:] = []
        state.estimate_printed = True

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.state.case_items = [i for i in session.items if isinstance(i, CaseItem)]

    def _mark_known_failures(self, items: list[pytest.Item]) -> None:
        """Items that also failed in the baseline fail as xfail: only new failures fail."""
        for item in items:
            if not isinstance(item, CaseItem):
                continue
            baseline = self.state.baselines.get(str(item.run.paths.run_dir))
            if baseline is None:
                continue
            for entry in baseline["items"]:
                if entry["case_id"] == item.case.id and entry["status"] == "failed":
                    item.add_marker(pytest.mark.xfail(
                        raises=ConditionsNotMet, strict=False,
                        reason="known failure: it failed in the baseline too"))
                    break

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


class CaseFile(PlainFailures, pytest.File):
    """A YAML case file: one item per case and model."""

    plain_failures = (CaseFileError,)

    def collect(self) -> Iterator[CaseItem]:
        state = self.config.stash[state_key]
        display = self.nodeid or self.path.name
        cases = load_case_file(self.path, display=display)
        state.collected_files[self.path.resolve()] = cases
        state.claim_case_ids(self.path, display, cases)
        structured = hasattr(self, "id")  # pytest >= 9.2 keeps node ids as NodeId
        for case in cases:
            for spec, run in state.runs.items():
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
    from ..engine.record import ItemRecord  # at the first item run: collecting needs no records

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
        self._job: CaseJob | None = None
        self._record: ItemRecord | None = None  # this item's record, until its teardown
        self._add_markers()

    def _add_markers(self) -> None:
        marks = ["imagetime", f"imagetime_{self.case.difficulty}",
                 f"imagetime_domain_{slug(self.case.domain)}"]
        marks += [f"imagetime_{level}" for level in self.case.levels]
        marks += [f"imagetime_{flag}" for flag in ("constraint", "quantity", "occlusion")
                  if getattr(self.case.applicable, flag)]
        domain = self.case.domain
        self.config.stash[state_key].markers.add(
            self, marks, lambda name: f"ImageTime items of domain {domain}")

    def base_record(self) -> ItemRecord:
        return base_record(self.case, self.run)

    def job(self) -> CaseJob:
        if self._job is None:  # asked for when the pipeline is planned, and again at setup
            from ..engine.pipeline import Job  # at the first item run, not at collection

            self._job = Job(self.nodeid, self.run, self.case, self.base_record())
        return self._job

    def setup(self) -> None:
        from ..engine.runner import ItemOutcome, Sheet  # the runner loads at the first item

        state = self.config.stash[state_key]
        if not self.run.judged:
            result = state.result_for(self)
            assert isinstance(result, Sheet)
            self.sheet = result
            return
        base = self.job().base
        try:
            result = state.result_for(self)
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
        from ..engine.conditions import explain, unmet_conditions  # at the first item run

        assert self.outcome is not None
        threshold = self.config.stash[state_key].options.pass_threshold
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
        state = self.config.stash[state_key]
        spec = next(s for s, run in state.runs.items() if run is self.run)
        return rerun_command(self.config, [self.nodeid], [spec])

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = None if self.case.line is None else self.case.line - 1
        return self.path, line, f"{self.case.id} [{self.run.model.name}]"

