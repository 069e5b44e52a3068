"""The pipeline that overlaps generation and judging, with stand-in stages."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, cast

import pytest
from PIL import Image

from pytest_imagetime.cases.model import Case
from pytest_imagetime.engine.item_error import ItemError
from pytest_imagetime.engine.pipeline import CostBudget, Job, Pipeline
from pytest_imagetime.engine.record import ItemRecord
from pytest_imagetime.engine.run_spec import RunSpec
from pytest_imagetime.engine.runner import (
    Drawn,
    ImagetimeSuite,
    ItemOutcome,
    Sheet,
    store_sheet,
    stored_sheet,
)
from pytest_imagetime.models.base import Generated
from tests.builders import make_case


def _spec(batch_size: int = 1, concurrency: int = 1, cpu_bound: bool = False,
          judge_cpu_bound: bool = False) -> RunSpec:
    """What the pipeline reads of a run; the stand-in stages below never look at it."""
    model = SimpleNamespace(concurrency=concurrency, cpu_bound=cpu_bound)
    judge = SimpleNamespace(cpu_bound=judge_cpu_bound)
    return cast(RunSpec, SimpleNamespace(batch_size=batch_size, judged=True, model=model,
                                         judge=judge))


CaseJob = Job[RunSpec, Case, ItemRecord]
CasePipeline = Pipeline[RunSpec, Case, ItemRecord, Sheet, Drawn, ItemOutcome]
Draw = Callable[[RunSpec, Sequence[Case]], Sequence[Sheet | Drawn | ItemError]]
JudgeStage = Callable[[RunSpec, Case, ItemRecord, Sheet], ItemOutcome]
ReuseStage = Callable[[RunSpec, Case, ItemRecord, Sheet], ItemOutcome | None]


class StagedSuite(ImagetimeSuite):
    """The ImageTime suite with some of its stages replaced by a test's stand-ins."""

    def __init__(self, generate: Draw, judge: JudgeStage, reuse: ReuseStage,
                 store: Callable[[RunSpec, Drawn], Sheet] = store_sheet,
                 lookup: Callable[[RunSpec, Case], Sheet | None] = stored_sheet) -> None:
        self._generate, self._judge, self._reuse = generate, judge, reuse
        self._store, self._lookup = store, lookup

    def lookup(self, run: RunSpec, item: Case) -> Sheet | None:
        return self._lookup(run, item)

    def draw(self, run: RunSpec, items: Sequence[Case]) -> Sequence[Sheet | Drawn | ItemError]:
        return self._generate(run, items)

    def store(self, run: RunSpec, drawn: Drawn) -> Sheet:
        return self._store(run, drawn)

    def reuse(self, run: RunSpec, item: Case, base: ItemRecord, stored: Sheet
              ) -> ItemOutcome | None:
        return self._reuse(run, item, base, stored)

    def judge(self, run: RunSpec, item: Case, base: ItemRecord, stored: Sheet) -> ItemOutcome:
        return self._judge(run, item, base, stored)


def staged(concurrency: int, lookahead: int, *, generate: Draw, judge: JudgeStage,
           reuse: ReuseStage, budget: CostBudget | None = None, generation_concurrency: int = 1,
           **stages: Any) -> CasePipeline:
    """A pipeline of the ImageTime suite whose stages are the given stand-ins."""
    return Pipeline(StagedSuite(generate, judge, reuse, **stages), concurrency, lookahead,
                    budget, generation_concurrency)


def _jobs(n: int, spec: RunSpec | None = None) -> list[CaseJob]:
    spec = spec or _spec()
    return [Job(f"item-{i}", spec, make_case(f"case-{i}"), cast(ItemRecord, None))
            for i in range(n)]


class Stages:
    """Stand-ins that record what ran when, and can be made slow or failing."""

    def __init__(self, judge_delay: float = 0.0, fail_generation: set[str] | None = None,
                 draw_delay: float = 0.0) -> None:
        self.judge_delay = judge_delay
        self.draw_delay = draw_delay
        self.calls: list[list[str]] = []
        self.drawing = 0
        self.max_drawing = 0
        self.fail_generation = fail_generation or set()
        self.generated: list[str] = []
        self.in_judgment = 0
        self.max_in_judgment = 0
        self.max_ahead = 0
        self.judged = 0
        self.lock = threading.Lock()

    def generate(self, spec: RunSpec, cases: Sequence[Case]) -> list[Sheet | ItemError]:
        with self.lock:
            self.calls.append([case.id for case in cases])
            self.drawing += 1
            self.max_drawing = max(self.max_drawing, self.drawing)
        time.sleep(self.draw_delay)
        with self.lock:
            self.drawing -= 1
        return [self._one(case) for case in cases]

    def _one(self, case: Case) -> Sheet | ItemError:
        if case.id in self.fail_generation:
            return ItemError(f"model failed on {case.id}")
        with self.lock:
            self.generated.append(case.id)
            self.max_ahead = max(self.max_ahead, len(self.generated) - self.judged)
        return Sheet(Image.new("RGB", (4, 4)), case.id, {}, True)

    def judge(self, spec: RunSpec, case: Case, base: ItemRecord, sheet: Sheet) -> ItemOutcome:
        with self.lock:
            self.in_judgment += 1
            self.max_in_judgment = max(self.max_in_judgment, self.in_judgment)
        time.sleep(self.judge_delay)
        with self.lock:
            self.in_judgment -= 1
            self.judged += 1
        record = cast(Any, type("R", (), {"judged": False, "cost_usd": 0.0})())
        return ItemOutcome(record, cast(Any, sheet.sha256), (), cast(Any, None))

    def reuse(self, spec: RunSpec, case: Case, base: ItemRecord, sheet: Sheet
              ) -> ItemOutcome | None:
        return None  # nothing stored: every sheet goes to the judge


def test_outcomes_come_back_in_any_order_of_asking() -> None:
    stages = Stages()
    pipeline = staged(4, 8, generate=stages.generate, judge=stages.judge, reuse=stages.reuse)
    jobs = _jobs(20)
    pipeline.plan(jobs)
    # Ask for the last one first: its future may be taken before the thread reaches it.
    for job in [jobs[-1], *jobs[:-1]]:
        assert cast(Any, pipeline.outcome(job)).judgment == job.case.id
    pipeline.close()
    assert stages.generated == [j.case.id for j in jobs]


def test_judgments_overlap_up_to_the_concurrency() -> None:
    stages = Stages(judge_delay=0.05)
    pipeline = staged(4, 8, generate=stages.generate, judge=stages.judge, reuse=stages.reuse)
    jobs = _jobs(16)
    pipeline.plan(jobs)
    for job in jobs:
        pipeline.outcome(job)
    pipeline.close()
    assert stages.max_in_judgment == 4


def test_generation_stays_at_most_lookahead_sheets_ahead() -> None:
    stages = Stages(judge_delay=0.02)
    pipeline = staged(2, 3, generate=stages.generate, judge=stages.judge, reuse=stages.reuse)
    jobs = _jobs(20)
    pipeline.plan(jobs)
    for job in jobs:
        pipeline.outcome(job)
    pipeline.close()
    assert 2 <= stages.max_ahead <= 3


def test_a_generation_failure_is_that_items_error_only() -> None:
    stages = Stages(fail_generation={"case-2"})
    pipeline = staged(2, 4, generate=stages.generate, judge=stages.judge, reuse=stages.reuse)
    jobs = _jobs(5)
    pipeline.plan(jobs)
    with pytest.raises(ItemError, match="model failed on case-2"):
        pipeline.outcome(jobs[2])
    assert pipeline.outcome(jobs[4]) is not None
    pipeline.close()


def test_closing_fails_waiting_items_instead_of_hanging() -> None:
    stages = Stages(judge_delay=0.2)
    pipeline = staged(1, 1, generate=stages.generate, judge=stages.judge, reuse=stages.reuse)
    jobs = _jobs(10)
    pipeline.plan(jobs)
    pipeline.close()
    with pytest.raises(ItemError, match="the run is stopping"):
        pipeline.outcome(jobs[-1])


def test_unplanned_items_run_inline() -> None:
    stages = Stages()
    pipeline = staged(2, 4, generate=stages.generate, judge=stages.judge, reuse=stages.reuse)
    (job,) = _jobs(1)
    assert not pipeline.planned
    assert pipeline.outcome(job) is not None
    pipeline.close()


def test_budget_refuses_once_spent() -> None:
    budget = CostBudget(0.01)
    budget.check()
    budget.add(0.01)
    with pytest.raises(ItemError, match="budget is spent"):
        budget.check()
    CostBudget(None).check()


def test_batches_group_consecutive_items_of_a_run() -> None:
    stages = Stages()
    pipeline = staged(2, 8, generate=stages.generate, judge=stages.judge, reuse=stages.reuse)
    batched, single = _spec(batch_size=3), _spec()
    jobs = _jobs(7, batched)
    jobs += [Job(f"other-{i}", single, make_case(f"other-{i}"), cast(ItemRecord, None))
             for i in range(2)]
    pipeline.plan(jobs)
    for job in jobs:
        pipeline.outcome(job)
    pipeline.close()
    assert stages.calls == [["case-0", "case-1", "case-2"], ["case-3", "case-4", "case-5"],
                            ["case-6"], ["other-0"], ["other-1"]]


@pytest.mark.parametrize(("setting", "apart", "accepted", "expected"), [
    # Each group goes ahead with the one before it, and is not looked up again.
    ("prompt-only", True, True, [["case-0", "case-1", "case-2", "case-3"], ["case-4"], [],
                                 ["other-0"]]),
    # Not queued (no child yet, say): each group is sent again before it is drawn.
    ("prompt-only", True, False, [["case-0", "case-1", "case-2", "case-3"],
                                  ["case-2", "case-3", "case-4"], ["case-4"], ["other-0"]]),
    ("scaffold", True, True, []),  # its lookups may draw references: nothing goes ahead
    ("prompt-only", False, True, []),  # drawing here: nothing to send ahead to
])
def test_a_backend_drawing_apart_is_sent_each_group_and_the_next_one_ahead(
        monkeypatch: pytest.MonkeyPatch, setting: str, apart: bool, accepted: bool,
        expected: list[list[str]]) -> None:
    from pytest_imagetime.engine import runner as runner_module

    ahead: list[list[str]] = []
    monkeypatch.setattr(runner_module, "planned_calls", lambda spec, cases: [
        ("generate_batch" if len(cases) > 1 else "generate", [c.id for c in cases])
    ] if cases else [])

    def draw_ahead(calls: list[tuple[str, list[str]]]) -> bool:
        ahead.append([case for _, cases in calls for case in cases])
        return accepted

    def spec(batch_size: int) -> RunSpec:
        model = SimpleNamespace(concurrency=1, cpu_bound=False, in_own_process=apart,
                                draw_ahead=draw_ahead)
        return cast(RunSpec, SimpleNamespace(batch_size=batch_size, judged=True, model=model,
                                             judge=SimpleNamespace(), setting=setting))

    stages = Stages()
    pipeline = staged(2, 8, generate=stages.generate, judge=stages.judge, reuse=stages.reuse)
    batched, other = spec(2), spec(1)
    jobs = [*_jobs(5, batched),
            Job("other-0", other, make_case("other-0"), cast(ItemRecord, None))]
    pipeline.plan(jobs)
    for job in jobs:
        pipeline.outcome(job)
    pipeline.close()
    assert stages.calls == [["case-0", "case-1"], ["case-2", "case-3"], ["case-4"],
                            ["other-0"]]
    # The group about to be drawn and the next group of the same run, never another run's.
    assert ahead == expected


def test_a_hosted_backend_gets_its_concurrency_and_others_one_at_a_time() -> None:
    for concurrency, expected in ((4, 4), (1, 1)):
        stages = Stages(draw_delay=0.2)  # long enough for all four to start on a busy machine
        pipeline = staged(8, 16, generate=stages.generate, judge=stages.judge, reuse=stages.reuse,
                          generation_concurrency=concurrency)
        jobs = _jobs(8, _spec(concurrency=concurrency))
        pipeline.plan(jobs)
        for job in jobs:
            pipeline.outcome(job)
        pipeline.close()
        assert stages.max_drawing == expected


@pytest.mark.parametrize(("cpu_bound", "judge_cpu_bound", "thread", "judged_on"), [
    (False, False, "imagetime-measure_0", "imagetime-judge"),
    (True, False, "imagetime-generate", "imagetime-judge"),
    (False, True, "imagetime-measure_0", "imagetime-measure_0"),
    (True, True, "imagetime-generate", "imagetime-generate"),
])
def test_new_drawings_are_stored_off_the_generation_thread_and_failures_reach_their_item(
        cpu_bound: bool, judge_cpu_bound: bool, thread: str, judged_on: str) -> None:
    # Beside the backend on a thread of their own, unless the backend draws on the CPU:
    # then between two drawings. A judge that computes on the CPU judges where the sheet
    # was stored; others in the judge pool.
    stages = Stages()
    stored_on: list[str] = []
    judge_threads: list[str] = []

    def judge(spec: RunSpec, case: Case, base: ItemRecord, sheet: Sheet) -> ItemOutcome:
        judge_threads.append(threading.current_thread().name)
        return stages.judge(spec, case, base, sheet)

    def draw(spec: RunSpec, cases: Sequence[Case]) -> list[Drawn]:
        return [Drawn(cast(Any, case), Generated(Image.new("RGB", (4, 4))), 0.0, 1)
                for case in cases]

    def store(spec: RunSpec, drawn: Drawn) -> Sheet:
        stored_on.append(threading.current_thread().name)
        case = cast(Case, drawn.item)
        if case.id == "case-1":
            raise ItemError("cannot store the sheet of case-1: disk full")
        return Sheet(drawn.generated.image, case.id, {}, True)

    pipeline = staged(2, 2, generate=draw, judge=judge, reuse=stages.reuse, store=store)
    jobs = _jobs(5, _spec(cpu_bound=cpu_bound, judge_cpu_bound=judge_cpu_bound))
    pipeline.plan(jobs)
    with pytest.raises(ItemError, match="disk full"):
        pipeline.outcome(jobs[1])
    # The failed item gave its slot back: the others still come (lookahead is only 2).
    for job in (jobs[0], *jobs[2:]):
        assert cast(Any, pipeline.outcome(job)).judgment == job.case.id
    pipeline.close()
    assert set(stored_on) == {thread}
    assert len(judge_threads) == 4 and all(t.startswith(judged_on) for t in judge_threads)


def test_a_stored_sheet_goes_to_a_cpu_judge_on_the_generation_thread() -> None:
    stages = Stages()
    judge_threads: list[str] = []

    def judge(spec: RunSpec, case: Case, base: ItemRecord, sheet: Sheet) -> ItemOutcome:
        judge_threads.append(threading.current_thread().name)
        return stages.judge(spec, case, base, sheet)

    pipeline = staged(2, 2, generate=stages.generate, judge=judge, reuse=stages.reuse)
    jobs = _jobs(3, _spec(judge_cpu_bound=True))
    pipeline.plan(jobs)
    assert [cast(Any, pipeline.outcome(job)).judgment for job in jobs] == [
        "case-0", "case-1", "case-2"]
    pipeline.close()
    assert judge_threads == ["imagetime-generate"] * 3


def test_stored_judgments_finish_on_the_generation_thread_without_the_judge() -> None:
    # Resuming: a stored sheet whose judgment is stored too never reaches the judge pool.
    stages = Stages()
    reused_on: list[str] = []
    stored = {"case-0", "case-2"}

    def reuse(spec: RunSpec, case: Case, base: ItemRecord, sheet: Sheet) -> ItemOutcome | None:
        if case.id == "case-3":
            raise ItemError("cannot read the sheet of case-3")
        if case.id not in stored:
            return None
        reused_on.append(threading.current_thread().name)
        return ItemOutcome(cast(Any, None), cast(Any, f"stored {case.id}"), (), cast(Any, None))

    pipeline = staged(2, 2, generate=stages.generate, judge=stages.judge, reuse=reuse)
    jobs = _jobs(5)
    pipeline.plan(jobs)
    answers = []
    for job in jobs:
        try:
            answers.append(cast(Any, pipeline.outcome(job)).judgment)
        except ItemError as exc:
            answers.append(str(exc))
    pipeline.close()
    assert answers == ["stored case-0", "case-1", "stored case-2",
                       "cannot read the sheet of case-3", "case-4"]
    assert stages.judged == 2  # case-1 and case-4 only
    assert set(reused_on) == {"imagetime-generate"}


def test_finished_items_are_worked_out_by_the_caller_without_a_thread() -> None:
    # Before planning, the plugin asks each item here: all of a resumed run is answered on
    # the calling thread, and the first item with anything to draw or judge gets None.
    stages = Stages()
    sheets = {"case-0", "case-1"}  # stored sheets; case-0's judgment is stored too

    def lookup(spec: RunSpec, case: Case) -> Sheet | None:
        return Sheet(Image.new("RGB", (4, 4)), case.id, {}, False) if case.id in sheets else None

    def reuse(spec: RunSpec, case: Case, base: ItemRecord, sheet: Sheet) -> ItemOutcome | None:
        if case.id != "case-0":
            return None
        return ItemOutcome(cast(Any, None), cast(Any, f"stored {case.id}"), (), cast(Any, None))

    pipeline = staged(2, 2, generate=stages.generate, judge=stages.judge, reuse=reuse,
                        lookup=lookup)
    jobs = _jobs(3)
    assert cast(Any, pipeline.finished(jobs[0])).judgment == "stored case-0"
    assert pipeline.finished(jobs[1]) is None  # its judgment is missing
    assert pipeline.finished(jobs[2]) is None  # its sheet is missing
    dense = cast(RunSpec, SimpleNamespace(**{**vars(jobs[1].spec), "judged": False}))
    sheet = pipeline.finished(Job("dense", dense, jobs[1].case, cast(ItemRecord, None)))
    assert isinstance(sheet, Sheet) and sheet.sha256 == "case-1"  # never judged: the sheet
    assert not pipeline.planned and stages.calls == [] and stages.judged == 0
    pipeline.close()
