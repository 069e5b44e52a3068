"""An active TempViz session: collection of the prompt tables, the item, and the reports.

With ``--imagetime-suite=tempviz --imagetime-tempviz-data=DIR`` and one or more
``--imagetime-model``, every row of ``DIR/<Category>.csv`` becomes one item per model. The
item's setup draws the image and asks the three questions (an error when the model or the
judge fails); the call passes when all three answers are yes. Workers under xdist run items;
only the controller writes reports.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ..backends.registry import Registry, UnknownBackend
from ..cases.inventory import slug
from ..engine.item_error import ItemError
from ..engine.pipeline import CostBudget, Job, Pipeline, model_concurrency
from ..engine.runner import now
from ..models.base import ImageModel
from ..report.pytest_junit import PytestJunit, junit_family, pytest_junit_of
from ..sheet.prompts import SHEET
from ..tempviz.examples import Examples, ExamplesError, load_examples
from ..tempviz.judge import TempvizJudge
from ..tempviz.names import CATEGORIES, STYLES
from ..tempviz.prompts import (
    KNOWN_DIFFICULTIES,
    KNOWN_PROMPT_CATEGORIES,
    QUESTION_NAMES,
    Prompt,
    TempvizDataError,
    category_of,
    check_directory,
    load_table,
)
from ..tempviz.record import TempvizRecord
from ..tempviz.report import build_report, summary_lines, write_answers, write_report
from ..tempviz.runner import (
    DrawnImage,
    Outcome,
    StoredImage,
    TempvizRun,
    TempvizSuite,
    run_paths,
    stored_outcome_exists,
)
from .failure_text import PlainFailures, item_error_line, report_text, setup_error_reason
from .markers import Markers
from .options import Options, for_session, option_path
from .registered_models import session_models
from .scheduling import shard_cases

PLUGIN_NAME = "imagetime-tempviz-session"
PromptJob = Job[TempvizRun, Prompt, TempvizRecord]
session_key = pytest.StashKey["TempvizSession"]()


def _raw(config: pytest.Config, name: str) -> str | None:
    dest = "imagetime_" + name.replace("-", "_")
    value = config.getoption(dest) or config.getini(dest)
    return str(value) if value else None


def _path(config: pytest.Config, name: str) -> Path:
    path = option_path(config, name)
    assert path is not None  # asked for only once the option's value is known
    return path


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    style: str
    examples: Examples | None


def parse_settings(config: pytest.Config) -> Settings:
    raw = _raw(config, "tempviz-data")
    if raw is None:
        raise pytest.UsageError("--imagetime-suite=tempviz needs the prompt tables: "
                                "--imagetime-tempviz-data=DIR (the directory holding "
                                f"{', '.join(c + '.csv' for c in CATEGORIES)})")
    data_dir = _path(config, "tempviz-data")
    try:
        check_directory(data_dir)
    except ValueError as exc:
        raise pytest.UsageError(f"--imagetime-tempviz-data={raw}: {exc}") from None
    style = _raw(config, "tempviz-style") or "simple"
    if style not in STYLES:
        raise pytest.UsageError(f"--imagetime-tempviz-style={style}: use "
                                f"{' or '.join(STYLES)}")
    examples_raw = _raw(config, "tempviz-examples")
    examples = None
    if examples_raw is not None:
        try:
            examples = load_examples(_path(config, "tempviz-examples"), data_dir, style)
        except ExamplesError as exc:
            raise pytest.UsageError(f"--imagetime-tempviz-examples={examples_raw}: {exc}"
                                    ) from None
    return Settings(data_dir, style, examples)


def _unsupported(options: Options) -> list[str]:
    """ImageTime options that mean nothing for TempViz: refused rather than ignored."""
    given = {
        "--imagetime-setting": options.setting != "prompt-only",
        "--imagetime-grid": options.grid != SHEET,
        "--imagetime-reference-dir": options.reference_dir is not None,
        "--imagetime-reference-model": options.reference_model is not None,
        "--imagetime-baseline": options.baseline is not None,
        "--imagetime-max-drop": bool(options.max_drop),
        "--imagetime-min": bool(options.floors),
        "--imagetime-update-baseline": options.update_baseline,
        "--imagetime-judge-repeats": options.judge_repeats != 1,
        "--imagetime-canaries": options.canaries,
    }
    return [name for name, used in given.items() if used]


def _create_tempviz_judge(options: Options, settings: Settings) -> TempvizJudge:
    name, _, model = options.judge.partition(":")
    if name != "vlm":
        raise pytest.UsageError(f"--imagetime-judge={options.judge}: the TempViz suite asks "
                                "its questions with a vision-language model: use vlm or "
                                "vlm:MODEL, and --imagetime-tempviz-style for the prompting")
    try:
        return TempvizJudge(options.judge_options, settings.style, settings.examples,
                            model or None)
    except (ImportError, ValueError) as exc:
        raise pytest.UsageError(f"--imagetime-judge={options.judge}: {exc}") from None


def start(config: pytest.Config, options: Options) -> None:
    """Set up the session of a run with ``--imagetime-suite=tempviz``."""
    unsupported = _unsupported(options)
    if unsupported:
        raise pytest.UsageError(f"--imagetime-suite=tempviz: {', '.join(unsupported)} "
                                "belong to the ImageTime suite and do not apply here")
    if not options.models:
        raise pytest.UsageError("--imagetime-suite=tempviz: give the image model(s) to test "
                                "with --imagetime-model (e.g. procedural, files:DIR, "
                                "openai-images, flux-dev)")
    settings = parse_settings(config)
    if options.dry_run:  # a dry run only counts: no workers to start
        config.option.dist = "no"
        config.option.numprocesses = None
    options = for_session(config, options)
    register_markers(config)
    session = TempvizSession(config, options, settings)
    if not hasattr(config, "workerinput") and not options.dry_run \
            and not config.option.collectonly:
        from ..store.writable import UnwritablePath, check_run_outputs  # checked once, at start

        try:  # before any item runs, not when its reports are written
            check_run_outputs(options.out, session.junit, options.html,
                              getattr(config.option, "xmlpath", None))
        except UnwritablePath as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[session_key] = session
    if not _is_xdist_worker(config):  # reports are the controller's, as pytest's LogXML
        config.pluginmanager.register(TempvizReporter(session), "imagetime-tempviz-reporter")
    # After the reporter: its session end (closing the pipeline) then comes first.
    config.pluginmanager.register(session, PLUGIN_NAME)
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # No paths given: a TempViz run collects the tables and nothing else.
        config.args = [str(settings.data_dir)]


def register_markers(config: pytest.Config) -> None:
    lines = ["tempviz: a TempViz item"]
    lines += [f"tempviz_{slug(c)}: TempViz items of category {c}" for c in CATEGORIES]
    lines += [f"tempviz_{slug(p)}: TempViz items of prompt category {p}"
              for p in KNOWN_PROMPT_CATEGORIES if slug(p) != "maps"]
    lines += [f"tempviz_difficulty_{d}: TempViz items of difficulty {d}"
              for d in KNOWN_DIFFICULTIES]
    for line in lines:
        config.addinivalue_line("markers", line)


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _create_model(spec: str, options: Options, models: Registry) -> ImageModel:
    try:
        model: ImageModel = models.create(spec, options=options.model_options)
    except (UnknownBackend, ValueError, ImportError) as exc:
        raise pytest.UsageError(f"--imagetime-model={spec}: {exc}") from None
    return model


class TempvizSession:
    """Run state of one pytest process: backends, the engine's pipeline, collection."""

    def __init__(self, config: pytest.Config, options: Options, settings: Settings) -> None:
        self.config = config
        self.options = options
        self.settings = settings
        self.judge = _create_tempviz_judge(options, settings)
        workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
        if options.max_cost is not None and not self.judge.priced:
            raise pytest.UsageError(
                f"--imagetime-max-cost needs the judge's price, and none is known for "
                f"{self.judge.model!r}: give --imagetime-judge-price=IN,OUT (USD per 1M "
                "tokens)")
        budget = None if options.max_cost is None else options.max_cost / workers
        self.runs: dict[str, TempvizRun] = {}
        for spec in options.models:
            model = _create_model(spec, options, session_models(config))
            self.runs[spec] = TempvizRun(
                model=model, judge=self.judge,
                paths=run_paths(options.out, model.name, self.judge.name), size=options.size,
                seed=options.seed, regenerate=options.regenerate, rejudge=options.rejudge)
        self.junit = options.junit
        if _raw(config, "junit") is None and not config.getoption("xmlpath", None):
            # Not the ImageTime suite's file: both suites may share an output directory.
            # With pytest's --junitxml that is the one JUnit file, as for ImageTime.
            self.junit = options.out / "tempviz-junit.xml"
        concurrency = options.judge_options.concurrency
        drawing = max((model_concurrency(run) for run in self.runs.values()), default=1)
        self.pipeline: Pipeline[TempvizRun, Prompt, TempvizRecord, StoredImage, DrawnImage,
                                Outcome] = Pipeline(
            TempvizSuite(), concurrency=concurrency, lookahead=max(2 * concurrency, 2 * drawing),
            budget=CostBudget(budget), generation_concurrency=drawing)
        self.markers = Markers(config)

    # ------------------------------------------------------------ collection

    def pytest_collect_file(self, file_path: Path,
                            parent: pytest.Collector) -> pytest.Collector | None:
        if category_of(file_path) is None:
            return None
        if file_path.parent.resolve() != self.settings.data_dir.resolve():
            return None
        return TempvizFile.from_parent(parent, path=file_path)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        if self.options.shard is not None:
            kept = shard_cases([i.prompt.id for i in items if isinstance(i, TempvizItem)],
                               self.options.shard)
            others = [i for i in items if isinstance(i, TempvizItem)
                      and i.prompt.id not in kept]
            if others:
                config.hook.pytest_deselected(items=others)
                items[:] = [i for i in items if not isinstance(i, TempvizItem)
                            or i.prompt.id in kept]
        if self.options.dry_run:
            self._dry_run(config, items)

    def _dry_run(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        ours = [i for i in items if isinstance(i, TempvizItem)]
        done = sum(stored_outcome_exists(i.run, i.prompt) for i in ours)
        todo = len(ours) - done
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "TempViz dry run")
            reporter.write_line(f"{len(ours)} items: {done} answered and stored, {todo} to "
                                f"draw or judge ({3 * todo} judge calls, judge "
                                f"{self.judge.model}, {self.judge.style}, "
                                f"{self.judge.shots}-shot)")
        config.hook.pytest_deselected(items=list(items))
        items[:] = []

    def plan_from(self, first: TempvizItem) -> None:
        """Start working ahead on this process's items, from ``first`` on, in order.
        A worker under xdist does not know its items ahead: it runs each in turn."""
        if self.pipeline.planned or _is_xdist_worker(self.config):
            return
        items = [i for i in first.session.items if isinstance(i, TempvizItem)]
        start = items.index(first)
        self.pipeline.plan([i.job for i in items[start:]])

    # ------------------------------------------------------------ running

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report: pytest.TestReport = yield
        line = item_error_line(item, call)
        if line is not None:
            report.longrepr = line
        return report

    # Before the reporter's: the pipeline stops before the reports are written.
    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.pipeline.close()


class TempvizReporter:
    """The controller's records of the TempViz items, and the reports written from them."""

    def __init__(self, session: TempvizSession) -> None:
        self.session = session
        self.config = session.config
        self.options = session.options
        self._pytest_junit: PytestJunit | None = None  # known once every plugin is configured
        self._outcomes: dict[str, tuple[str, str]] = {}
        self.records: dict[str, list[TempvizRecord]] = {}
        self.messages: dict[str, str] = {}
        self.reports: list[tuple[Path, dict[str, Any]]] = []

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._pytest_junit = pytest_junit_of(self.config)

    # First: pytest's own JUnit file takes a case's properties from its teardown report.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "setup" and report.failed:
            self._outcomes[report.nodeid] = ("error", report_text(report))
        elif report.when == "call":
            self._outcomes[report.nodeid] = ("passed" if report.passed else "failed",
                                             report_text(report))
        elif report.when == "teardown":
            self._finish_item(report)

    def _finish_item(self, report: pytest.TestReport) -> None:
        outcome = self._outcomes.pop(report.nodeid, None)
        record = TempvizRecord.from_properties(report.user_properties)
        if outcome is None or record is None:
            return  # skipped, or not a TempViz item
        status, text = outcome
        if status == "error":
            record = record.with_status("error", setup_error_reason(record.error, text))
        else:
            record = record.with_status(status)
        self.records.setdefault(record.run_dir, []).append(record)
        if self._pytest_junit is not None:
            from ..tempviz.junit import case_output  # only with pytest's --junitxml

            self._pytest_junit.case(report, "tempviz.", record.to_properties(),
                                    case_output(record, self.config.invocation_params.dir))
        if text:
            self.messages[record.key] = text

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        created = now()
        for run in self.session.runs.values():
            records = self.records.get(str(run.paths.run_dir))
            if not records:
                continue
            report = build_report(self._manifest(run), records, created)
            write_report(run.paths.report, report)
            write_answers(run.paths.run_dir / "answers.csv", records)
            self.reports.append((run.paths.report, report))
        if self.options.html is not None and self.reports:
            from ..tempviz.html import write_html  # only with --imagetime-html

            write_html([r for _, r in self.reports], self.options.html)
        all_records = [r for rs in self.records.values() for r in rs]
        if self.session.junit is not None and all_records:
            from ..tempviz.junit import write_junit  # only with --imagetime-junit

            write_junit(self.session.junit, all_records, self.messages,
                        case_properties=junit_family(self.config) == "xunit1",
                        root=self.config.invocation_params.dir)

    def _manifest(self, run: TempvizRun) -> dict[str, Any]:
        examples = self.session.settings.examples
        return {
            "suite": "tempviz",
            "model": {"spec": run.model.name, "config": dict(run.model.config())},
            "judge": {"name": run.judge.name, "style": run.judge.style,
                      "shots": run.judge.shots, "config": dict(run.judge.config())},
            "size": run.size, "seed": run.seed, "data_dir": str(self.session.settings.data_dir),
            "run_dir": str(run.paths.run_dir), "questions": dict(QUESTION_NAMES),
            "examples": None if examples is None else {
                "path": str(examples.path), "sha256": examples.sha256,
                "counts": examples.counts()},
            "shard": None if self.options.shard is None else "{}/{}".format(*self.options.shard),
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.reports:
            return
        tr = terminalreporter
        tr.write_sep("=", "TempViz summary (accuracy: share of yes)")
        for line in summary_lines([report for _, report in self.reports]):
            tr.write_line(line)
        for path, _ in self.reports:
            tr.write_line(f"report: {path}")
            tr.write_line(f"answers: {path.parent / 'answers.csv'}")
        if self.session.junit is not None:
            tr.write_line(f"junit: {self.session.junit}")
        if self.options.html is not None:
            tr.write_line(f"html: {self.options.html / 'index.html'}")




class TempvizFile(PlainFailures, pytest.File):
    """One category table: one item per row and model."""

    plain_failures = (TempvizDataError,)

    def collect(self) -> Iterator[TempvizItem]:
        session: TempvizSession = self.config.stash[session_key]
        for prompt in load_table(self.path, display=self.nodeid or self.path.name):
            for spec, run in session.runs.items():
                yield TempvizItem.from_parent(self, name=f"{prompt.id}[{spec}]",
                                              prompt=prompt, run=run)


class NotAllYes(AssertionError):
    """The judge answered, and not every answer is yes: a test failure, not an error."""


class TempvizItem(PlainFailures, pytest.Item):
    """One prompt x model: setup draws and judges, the call asserts three yeses."""

    plain_failures = (NotAllYes, ItemError)

    def __init__(self, *, prompt: Prompt, run: TempvizRun, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prompt = prompt
        self.run = run
        self.outcome: Outcome | None = None
        self.job: PromptJob = Job(self.nodeid, run, prompt, run.base_record(prompt))
        # Prompt categories and difficulties come from the data.
        self.config.stash[session_key].markers.add(
            self, prompt.markers(), lambda name: f"TempViz items ({name[8:]})")

    def setup(self) -> None:
        session: TempvizSession = self.config.stash[session_key]
        session.plan_from(self)
        base = self.job.base
        self.user_properties.extend(base.to_properties())
        try:
            result = session.pipeline.outcome(self.job)
        except ItemError as exc:
            self._set_record(base.with_status("error", str(exc)))
            raise
        assert isinstance(result, Outcome)  # every TempViz item is judged
        self.outcome = result
        self._set_record(result.record)

    def _set_record(self, record: TempvizRecord) -> None:
        kept = [(k, v) for k, v in self.user_properties if not k.startswith("tempviz.")]
        self.user_properties[:] = [*kept, *record.to_properties()]

    def runtest(self) -> None:
        assert self.outcome is not None
        record = self.outcome.record
        if all(v == "yes" for v in record.answers.values()):
            return
        lines = [f"{self.prompt.id} [{self.run.model.name}]: not every answer is yes",
                 f"  prompt: {self.prompt.prompt}"]
        for question, name in QUESTION_NAMES.items():
            answer = self.outcome.answers[question]
            why = f" ({answer.analysis})" if answer.analysis and answer.answer == "no" else ""
            lines.append(f"  {question.upper()} {name}: {answer.answer}{why}")
        raise NotAllYes("\n".join(lines))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.prompt.line - 1, f"{self.prompt.id} [{self.run.model.name}]"
