"""Overlapping generation and judging within one pytest process.

Generation is GPU-bound, judging network-bound. Told the items this process will run, in
order, the pipeline generates them one after another on a background thread and hands each
drawing to a pool of threads as soon as it exists; there it is stored, measured (pixel facts)
and judged, so the wall time tends to max(total generation, total judging / concurrency)
instead of their sum, and the backend draws the next sheet while the last one is encoded. A
backend that draws on this machine's CPU (``cpu_bound``: torch on the CPU, the procedural
model) has its sheets stored and measured between two drawings instead: beside them, that
work could only compete for the same cores and the interpreter lock. Likewise a judge that
computes in this process (``cpu_bound``: the pixel and replay judges) judges each sheet on
the thread that stored it; the judge pool is for judges that wait on a server.
A backend that draws in a process of its own (``--imagetime-model-process``) has its sheets
encoded and measured in measuring processes too, so that this process's interpreter lock is
left to pytest and the judge, and it is sent the calls of the next group ahead
(``draw_ahead``), so that it never waits for this process between two sheets. An item's
setup then only waits for its own result.

Memory stays flat: at most ``lookahead`` sheets are generated and not yet judged (images are
on disk; the pool holds only those in flight), and results are dropped once taken.
The concurrency bound is per process: under ``-n N`` a run makes up to N x concurrency calls
at once.

Backends are called one request at a time (they need not be thread-safe), except that a
backend with ``generate_batch`` gets up to ``--imagetime-batch-size`` consecutive items of its
run at once, and a hosted backend with ``concurrency`` > 1 gets that many calls in flight.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..cases.loading import Case
from .item_error import ItemError
from .record import ItemRecord
from .run_spec import RunSpec
from .runner import (
    Drawn,
    ItemOutcome,
    Sheet,
    draw_sheets,
    judge_sheet,
    measured_apart,
    needs_measuring,
    planned_calls,
    store_sheet,
    stored_outcome,
    stored_sheet,
)

if TYPE_CHECKING:  # imported when a run first measures apart: most runs never do
    from concurrent.futures import ProcessPoolExecutor

# What an item gets: its scored outcome, or for a dense grid (never judged) its sheet.
Result = ItemOutcome | Sheet
Drawing = Sheet | Drawn | ItemError  # what the generation step hands on
MEASURING_THREADS = 1
# Beside a backend drawing in its own process, sheets are encoded and measured in these
# processes (each fed by a thread that only waits): this process keeps pytest and the judge.
MEASURING_PROCESSES = 2
Work = list[tuple["Job", "Future[Result]"]]
Queue = deque[tuple["Job", "Future[Result]"]]


@dataclass(frozen=True)
class Job:
    """One item's work: which run, which case, and the record it starts from."""

    key: str
    spec: RunSpec
    case: Case
    base: ItemRecord


class CostBudget:
    """Stops new judge calls once the spend of this process reaches its share of the budget."""

    def __init__(self, limit_usd: float | None) -> None:
        self.limit_usd = limit_usd
        self.spent_usd = 0.0
        self._lock = threading.Lock()

    def check(self) -> None:
        with self._lock:
            if self.limit_usd is not None and self.spent_usd >= self.limit_usd:
                raise ItemError(f"not judged: the judge budget is spent (${self.spent_usd:.4f} "
                                f"of ${self.limit_usd:.4f}; --imagetime-max-cost)")

    def add(self, usd: float) -> None:
        with self._lock:
            self.spent_usd += usd


def model_concurrency(spec: RunSpec) -> int:
    """Calls in flight the run's backend takes: 1 unless it says otherwise (hosted APIs)."""
    return max(1, spec.model.concurrency)


def cpu_bound(spec: RunSpec) -> bool:
    """Whether the run's backend draws on this machine's CPU (``cpu_bound``)."""
    return spec.model.cpu_bound


def measures_apart(spec: RunSpec) -> bool:
    """Whether the run's drawings are encoded and measured in measuring processes: when its
    backend draws in a process of its own (``--imagetime-model-process``), this process's
    interpreter lock is then only the harness's, and a sheet's PNG and pixel facts would
    take it from pytest and the judge."""
    return spec.model.in_own_process


def judged_in_place(spec: RunSpec) -> bool:
    """Whether a sheet is judged on the thread that has it (its judge computes in this
    process, ``cpu_bound``, or there is no judgment) rather than in the judge pool, which
    is there to overlap the waits of judges that call a server."""
    return not spec.judged or spec.judge.cpu_bound


class Pipeline:
    def __init__(self, concurrency: int, lookahead: int, budget: CostBudget | None = None,
                 generate: Callable[[RunSpec, Sequence[Case]], Sequence[Drawing]] = draw_sheets,
                 judge: Callable[[RunSpec, Case, ItemRecord, Sheet], ItemOutcome] = judge_sheet,
                 generation_concurrency: int = 1,
                 store: Callable[[RunSpec, Drawn], Sheet] = store_sheet,
                 reuse: Callable[[RunSpec, Case, ItemRecord, Sheet], ItemOutcome | None]
                 = stored_outcome,
                 lookup: Callable[[RunSpec, Case], Sheet | None] = stored_sheet) -> None:
        self._pool = ThreadPoolExecutor(max_workers=concurrency,
                                        thread_name_prefix="imagetime-judge")
        self._drawers = ThreadPoolExecutor(max_workers=max(1, generation_concurrency),
                                           thread_name_prefix="imagetime-draw")
        # Encoding and measuring is CPU-bound Python and numpy: one thread beside the backend
        # is what the interpreter lock lets through; more would only contend for it.
        self._measurers = ThreadPoolExecutor(max_workers=MEASURING_THREADS,
                                             thread_name_prefix="imagetime-measure")
        self._apart_feeders = ThreadPoolExecutor(max_workers=MEASURING_PROCESSES,
                                                 thread_name_prefix="imagetime-measure-apart")
        self._apart: ProcessPoolExecutor | None = None  # started at the first such sheet
        self._apart_lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max(1, lookahead))
        self._budget = budget or CostBudget(None)
        self._generate = generate
        self._store = store
        self._judge = judge
        self._reuse = reuse
        self._lookup = lookup
        self._futures: dict[str, Future[Result]] = {}
        self._lock = threading.Lock()
        # One generation at a time per process for backends that do not say they take more.
        self._generating = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._queued_ahead: set[str] = set()  # jobs whose calls went ahead (draw_ahead)

    @property
    def planned(self) -> bool:
        return self._thread is not None

    def plan(self, jobs: Sequence[Job]) -> None:
        """Start working through ``jobs`` in the order they will be asked for."""
        if self._thread is not None:
            return
        work: Queue = deque()
        with self._lock:
            for job in jobs:
                future = self._futures.setdefault(job.key, Future())
                work.append((job, future))
        # The thread keeps its own references: an item may take its future out of the table
        # (and wait on it) before the thread reaches it. It drops each as it hands it on, so
        # finished results (held by their futures) do not stay in memory to the session end.
        self._thread = threading.Thread(target=self._generate_all, args=(work,),
                                        name="imagetime-generate", daemon=True)
        self._thread.start()

    def finished(self, job: Job) -> Result | None:
        """The item's result when the store holds all of it (its sheet and, in a judged run,
        its judgments), worked out on the calling thread; None when anything must be drawn
        or judged. Items are asked here until the first that is not finished, and the
        pipeline is planned from that one on: a resumed run then never hands an item to
        another thread (each hop costs more than the lookup itself)."""
        sheet = self._lookup(job.spec, job.case)
        return None if sheet is None else self._reused(job, sheet)

    def outcome(self, job: Job) -> Result:
        """The item's outcome, waiting for it if needed; raises ItemError on failure."""
        with self._lock:
            future = self._futures.pop(job.key, None)
        if future is None:  # not planned: do it here, still one generation at a time
            return self._run_inline(job)
        return future.result()

    def close(self) -> None:
        """Stop generating, drop queued judgments and wait for the calls in flight."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._drawers.shutdown(wait=True, cancel_futures=True)
        self._measurers.shutdown(wait=True, cancel_futures=True)
        self._apart_feeders.shutdown(wait=True, cancel_futures=True)
        if self._apart is not None:
            self._apart.shutdown(wait=True, cancel_futures=True)
        self._pool.shutdown(wait=True, cancel_futures=True)

    # ------------------------------------------------------------ internals

    def _draw(self, spec: RunSpec, cases: Sequence[Case]) -> Sequence[Drawing]:
        if model_concurrency(spec) > 1:
            return self._generate(spec, cases)
        with self._generating:
            return self._generate(spec, cases)

    def _stored(self, spec: RunSpec, drawing: Sheet | Drawn) -> Sheet:
        return self._store(spec, drawing) if isinstance(drawing, Drawn) else drawing

    def _run_inline(self, job: Job) -> Result:
        drawing = self._draw(job.spec, [job.case])[0]
        if isinstance(drawing, ItemError):
            raise drawing
        sheet = self._stored(job.spec, drawing)
        if not job.spec.judged:
            return sheet
        self._budget.check()
        return self._judged(job, sheet)

    def _judged(self, job: Job, sheet: Sheet) -> ItemOutcome:
        outcome = self._judge(job.spec, job.case, job.base, sheet)
        if outcome.record.judged:
            self._budget.add(outcome.record.cost_usd or 0.0)
        return outcome

    def _generate_all(self, work: Queue) -> None:
        try:
            self._generate_each(work)
            # Hosted draws may still be running: wait for them before failing what is left.
            self._drawers.shutdown(wait=True)
        finally:
            # Stopped or broken: no item may wait forever for a sheet that will not come.
            for _job, future in work:
                if not future.done() and not future.running() \
                        and future.set_running_or_notify_cancel():
                    future.set_exception(ItemError("not generated: the run is stopping"))

    def _generate_each(self, work: Queue) -> None:
        while work:
            group = _next_group(work)
            if not self._take_slots(len(group)):
                work.extendleft(reversed(group))  # not started: failed with the rest
                return
            running = []
            for job, future in group:
                if future.set_running_or_notify_cancel():
                    running.append((job, future))
                else:
                    self._slots.release()
            if not running:
                continue
            if model_concurrency(running[0][0].spec) > 1:
                try:
                    self._drawers.submit(self._draw_group, running)
                except RuntimeError as exc:  # shut down: the session is ending
                    self._fail_group(running, ItemError(f"not generated: the run is stopping "
                                                        f"({exc})"))
            else:
                self._send_ahead(running, work)
                self._draw_group(running)

    def _send_ahead(self, group: Work, work: Queue) -> None:
        """Tell a backend drawing in a process of its own the calls that come next
        (``draw_ahead``): this group's, unless it went ahead with the last one, and the next
        group's of the same run. It then starts each drawing as soon as it sent the last
        one back, without waiting for this process to ask. Not in the scaffold setting, whose
        lookups may draw references."""
        spec = group[0][0].spec
        if not (measures_apart(spec) and spec.setting == "prompt-only"):
            return
        upcoming = _peek_group(work) if work and work[0][0].spec is spec else []
        # A group queued with the last one is not looked up again. Group by group: each is
        # one draw_sheets, so one batch where the backend batches.
        queued = all(job.key in self._queued_ahead for job, _ in group)
        calls = [*([] if queued else planned_calls(spec, [job.case for job, _ in group])),
                 *planned_calls(spec, [job.case for job, _ in upcoming])]
        queued_now = spec.model.draw_ahead(calls=calls)
        self._queued_ahead = {job.key for job, _ in upcoming} if queued_now else set()

    def _take_slots(self, count: int) -> bool:
        """Wait for room for ``count`` more sheets; False (holding none) once stopping."""
        taken = 0
        while taken < count:
            if self._stop.is_set():
                for _ in range(taken):
                    self._slots.release()
                return False
            if self._slots.acquire(timeout=0.1):
                taken += 1
        return True

    def _fail_group(self, group: Work, error: BaseException) -> None:
        for _job, future in group:
            future.set_exception(error)
            self._slots.release()

    def _draw_group(self, group: Work) -> None:
        spec = group[0][0].spec
        try:
            sheets = self._draw(spec, [job.case for job, _ in group])
        except BaseException as exc:  # the items report it; the run goes on
            self._fail_group(group, exc)
            return
        for (job, future), drawing in zip(group, sheets, strict=True):
            if isinstance(drawing, ItemError):
                future.set_exception(drawing)
                self._slots.release()
                continue
            # A new drawing is stored and measured on its own thread, so that the backend
            # draws the next one meanwhile (on a GPU or a server), unless the backend draws
            # on the CPU: a thread beside it would only slow it down. A stored sheet goes
            # straight to its judge.
            if isinstance(drawing, Drawn) and cpu_bound(spec):
                self._store_into(job, drawing, future)
            elif isinstance(drawing, Drawn) and measures_apart(spec):
                self._hand_on(self._apart_feeders, self._store_into, job, drawing, future)
            elif isinstance(drawing, Drawn):
                self._hand_on(self._measurers, self._store_into, job, drawing, future)
            elif not self._finished_from_store(job, drawing, future):
                self._to_judge(job, drawing, future)

    def _finished_from_store(self, job: Job, sheet: Sheet, future: Future[Result]) -> bool:
        """Finish a stored sheet whose judgments are stored too, here: a trip through the
        judge pool would only add a thread hop per item, and a resumed run is nothing else.
        False when the judge must be called."""
        try:
            result = self._reused(job, sheet)
        except BaseException as exc:
            future.set_exception(exc)
            self._slots.release()
            return True
        if result is None:
            return False
        future.set_result(result)
        self._slots.release()
        return True

    def _reused(self, job: Job, sheet: Sheet) -> Result | None:
        """The item's result from its stored sheet without calling the judge (the sheet
        itself in a run that is not judged); None when the judge must be called."""
        if not job.spec.judged:
            return sheet
        return self._reuse(job.spec, job.case, job.base, sheet)

    def _hand_on(self, pool: ThreadPoolExecutor, task: Callable[[Job, Any, Future[Result]], None],
                 job: Job, drawing: Sheet | Drawn, future: Future[Result]) -> None:
        try:
            pool.submit(task, job, drawing, future)
        except RuntimeError as exc:  # the pool is shut down: the session is ending
            future.set_exception(ItemError(f"not judged: the run is stopping ({exc})"))
            self._slots.release()

    def _store_into(self, job: Job, drawing: Drawn, future: Future[Result]) -> None:
        try:
            if measures_apart(job.spec):
                drawing = self._measured_apart(job.spec, drawing)
            sheet = self._store(job.spec, drawing)
        except BaseException as exc:
            future.set_exception(exc)
            self._slots.release()
            return
        self._to_judge(job, sheet, future)

    def _measured_apart(self, spec: RunSpec, drawing: Drawn) -> Drawn:
        """The drawing with its PNG and pixel facts made in a measuring process; as it came
        when there is nothing to make, or the processes cannot (the sheet is then encoded
        and measured here, as without them)."""
        import pickle
        from concurrent.futures.process import BrokenProcessPool

        encode, measure = needs_measuring(spec, drawing)
        if not (encode or measure):
            return drawing
        try:
            measured = self._measuring_processes().submit(
                measured_apart, drawing.generated.image, encode, measure).result()
        except (BrokenProcessPool, RuntimeError, OSError, pickle.PicklingError):
            return drawing
        return replace(drawing, measured=measured)

    def _measuring_processes(self) -> ProcessPoolExecutor:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with self._apart_lock:
            if self._apart is None:
                self._apart = ProcessPoolExecutor(
                    max_workers=MEASURING_PROCESSES,
                    mp_context=multiprocessing.get_context("spawn"))
            return self._apart

    def _to_judge(self, job: Job, sheet: Sheet, future: Future[Result]) -> None:
        """Judge here or in the pool (``judged_in_place``): a hop to a pool thread costs a
        judge that computes on the CPU more than it could overlap."""
        if judged_in_place(job.spec):
            self._judge_into(job, sheet, future)
        else:
            self._hand_on(self._pool, self._judge_into, job, sheet, future)

    def _judge_into(self, job: Job, sheet: Sheet, future: Future[Result]) -> None:
        try:
            if not job.spec.judged:
                future.set_result(sheet)
                return
            self._budget.check()
            future.set_result(self._judged(job, sheet))
        except BaseException as exc:
            future.set_exception(exc)
        finally:
            self._slots.release()


def _next_group(work: Queue) -> Work:
    """The next consecutive jobs of one run, as many as its batch size allows, taken off."""
    return [work.popleft() for _ in range(_group_size(work))]


def _peek_group(work: Queue) -> Work:
    """The group ``_next_group`` would take, left in place."""
    return [work[i] for i in range(_group_size(work))]


def _group_size(work: Queue) -> int:
    spec = work[0][0].spec
    size = 1
    while size < min(len(work), max(1, spec.batch_size)) and work[size][0].spec is spec:
        size += 1
    return size
