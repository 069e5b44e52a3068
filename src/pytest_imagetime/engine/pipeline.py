"""The look-ahead pipeline: one process's items drawn, stored, measured and judged in the
order pytest asks for them, for any suite (``suite.py``).

Told the items, a background thread draws them one group after another and hands each
drawing on as soon as it exists: it is stored and measured on a thread of its own (or between
two drawings, for a backend that draws on this machine's CPU; or in measuring processes, for
a backend that draws in a process of its own, which is also sent the next group's calls
ahead), then judged in a pool of ``concurrency`` threads (or in place, for a judge that
computes in this process). At most ``lookahead`` sheets are drawn and not yet judged; results
are dropped once taken. Backends get one call at a time unless they declare ``concurrency``;
a backend with ``generate_batch`` gets up to its run's ``batch_size`` items at once. Why it is
built this way: docs/performance.md, "The look-ahead pipeline".
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic

from .item_error import ItemError
from .suite import DrawnT, EngineRun, ItemT, OutcomeT, RecordT, RunT, StoredT, Suite

if TYPE_CHECKING:  # imported when a run first measures apart: most runs never do
    from concurrent.futures import ProcessPoolExecutor

MEASURING_THREADS = 1
# Beside a backend drawing in its own process, sheets are encoded and measured in these
# processes (each fed by a thread that only waits): this process keeps pytest and the judge.
MEASURING_PROCESSES = 2


@dataclass(frozen=True)
class Job(Generic[RunT, ItemT, RecordT]):
    """One item's work: which run, which case (or prompt), and the record it starts from."""

    key: str
    spec: RunT
    case: ItemT
    base: RecordT


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


def model_concurrency(spec: EngineRun) -> int:
    """Calls in flight the run's backend takes: 1 unless it says otherwise (hosted APIs)."""
    return max(1, int(getattr(spec.model, "concurrency", 1) or 1))


def cpu_bound(spec: EngineRun) -> bool:
    """Whether the run's backend draws on this machine's CPU (``cpu_bound``)."""
    return bool(getattr(spec.model, "cpu_bound", False))


def measures_apart(spec: EngineRun) -> bool:
    """Whether the run's drawings are encoded and measured in measuring processes: when its
    backend draws in a process of its own (``--imagetime-model-process``), this process's
    interpreter lock is then only the harness's, and a sheet's PNG and pixel facts would
    take it from pytest and the judge."""
    return bool(getattr(spec.model, "in_own_process", False))


def judged_in_place(spec: EngineRun) -> bool:
    """Whether a sheet is judged on the thread that has it (its judge computes in this
    process, ``cpu_bound``, or there is no judgment) rather than in the judge pool, which
    is there to overlap the waits of judges that call a server."""
    return not spec.judged or bool(getattr(spec.judge, "cpu_bound", False))


class Pipeline(Generic[RunT, ItemT, RecordT, StoredT, DrawnT, OutcomeT]):
    """The items of one process, worked ahead through ``suite``'s stages."""

    def __init__(self, suite: Suite[RunT, ItemT, RecordT, StoredT, DrawnT, OutcomeT],
                 concurrency: int, lookahead: int, budget: CostBudget | None = None,
                 generation_concurrency: int = 1) -> None:
        self._suite = suite
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
        self._futures: dict[str, Future[OutcomeT | StoredT]] = {}
        self._lock = threading.Lock()
        # One generation at a time per process for backends that do not say they take more.
        self._generating = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._queued_ahead: set[str] = set()  # jobs whose calls went ahead (draw_ahead)

    @property
    def planned(self) -> bool:
        return self._thread is not None

    def plan(self, jobs: Sequence[Job[RunT, ItemT, RecordT]]) -> None:
        """Start working through ``jobs`` in the order they will be asked for."""
        if self._thread is not None:
            return
        work: deque[Task[RunT, ItemT, RecordT, OutcomeT | StoredT]] = deque()
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

    def finished(self, job: Job[RunT, ItemT, RecordT]) -> OutcomeT | StoredT | None:
        """The item's result when the store holds all of it (its sheet and, in a judged run,
        its judgments), worked out on the calling thread; None when anything must be drawn
        or judged. Items are asked here until the first that is not finished, and the
        pipeline is planned from that one on: a resumed run then never hands an item to
        another thread (each hop costs more than the lookup itself)."""
        stored = self._suite.lookup(job.spec, job.case)
        return None if stored is None else self._reused(job, stored)

    def outcome(self, job: Job[RunT, ItemT, RecordT]) -> OutcomeT | StoredT:
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

    def _draw(self, spec: RunT, cases: Sequence[ItemT]) -> Sequence[StoredT | DrawnT | ItemError]:
        if model_concurrency(spec) > 1:
            return self._suite.draw(spec, cases)
        with self._generating:
            return self._suite.draw(spec, cases)

    def _run_inline(self, job: Job[RunT, ItemT, RecordT]) -> OutcomeT | StoredT:
        drawing = self._draw(job.spec, [job.case])[0]
        if isinstance(drawing, ItemError):
            raise drawing
        if self._suite.is_drawn(drawing):
            stored = self._suite.store(job.spec, drawing)
        else:
            stored = drawing
            reused = self._reused(job, stored)
            if reused is not None:
                return reused
        if not job.spec.judged:
            return stored
        return self._judged_within_budget(job, stored)

    def _judged_within_budget(self, job: Job[RunT, ItemT, RecordT], stored: StoredT
                              ) -> OutcomeT:
        """Ask the judge unless the budget is spent, and charge the budget what it cost."""
        self._budget.check()
        outcome = self._suite.judge(job.spec, job.case, job.base, stored)
        self._budget.add(self._suite.spent_usd(outcome))
        return outcome

    def _generate_all(self, work: Queue[RunT, ItemT, RecordT, OutcomeT | StoredT]) -> None:
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

    def _generate_each(self, work: Queue[RunT, ItemT, RecordT, OutcomeT | StoredT]) -> None:
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

    def _send_ahead(self, group: Work[RunT, ItemT, RecordT, OutcomeT | StoredT],
                    work: Queue[RunT, ItemT, RecordT, OutcomeT | StoredT]) -> None:
        """Tell a backend drawing in a process of its own the calls that come next
        (``draw_ahead``): this group's, unless it went ahead with the last one, and the next
        group's of the same run. It then starts each drawing as soon as it sent the last
        one back, without waiting for this process to ask. Not where the suite cannot tell
        the calls ahead (the scaffold setting, whose lookups may draw references)."""
        spec = group[0][0].spec
        send = getattr(spec.model, "draw_ahead", None)
        if not (callable(send) and measures_apart(spec)):
            return
        upcoming = _peek_group(work) if work and work[0][0].spec is spec else []
        # A group queued with the last one is not looked up again. Group by group: each is
        # one draw, so one batch where the backend batches.
        queued = all(job.key in self._queued_ahead for job, _ in group)
        now = [] if queued else self._suite.calls_ahead(spec, [job.case for job, _ in group])
        then = self._suite.calls_ahead(spec, [job.case for job, _ in upcoming])
        if now is None or then is None:
            return
        self._queued_ahead = {job.key for job, _ in upcoming} if send([*now, *then]) else set()

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

    def _fail_group(self, group: Work[RunT, ItemT, RecordT, OutcomeT | StoredT],
                    error: BaseException) -> None:
        for _job, future in group:
            future.set_exception(error)
            self._slots.release()

    def _draw_group(self, group: Work[RunT, ItemT, RecordT, OutcomeT | StoredT]) -> None:
        spec = group[0][0].spec
        try:
            drawings = self._draw(spec, [job.case for job, _ in group])
        except BaseException as exc:  # the items report it; the run goes on
            self._fail_group(group, exc)
            return
        for (job, future), drawing in zip(group, drawings, strict=True):
            if isinstance(drawing, ItemError):
                future.set_exception(drawing)
                self._slots.release()
                continue
            # A new drawing is stored and measured on its own thread, so that the backend
            # draws the next one meanwhile (on a GPU or a server), unless the backend draws
            # on the CPU: a thread beside it would only slow it down. A stored sheet goes
            # straight to its judge.
            if self._suite.is_drawn(drawing):
                if cpu_bound(spec):
                    self._store_into(job, drawing, future)
                elif measures_apart(spec):
                    self._hand_on(self._apart_feeders, self._store_into, job, drawing, future)
                else:
                    self._hand_on(self._measurers, self._store_into, job, drawing, future)
            elif not self._finished_from_store(job, drawing, future):
                self._to_judge(job, drawing, future)

    def _finished_from_store(self, job: Job[RunT, ItemT, RecordT], stored: StoredT,
                             future: Future[OutcomeT | StoredT]) -> bool:
        """Finish a stored sheet whose judgments are stored too, here: a trip through the
        judge pool would only add a thread hop per item, and a resumed run is nothing else.
        False when the judge must be called."""
        try:
            result = self._reused(job, stored)
        except BaseException as exc:
            future.set_exception(exc)
            self._slots.release()
            return True
        if result is None:
            return False
        future.set_result(result)
        self._slots.release()
        return True

    def _reused(self, job: Job[RunT, ItemT, RecordT], stored: StoredT
                ) -> OutcomeT | StoredT | None:
        """The item's result from its stored sheet without calling the judge (the sheet
        itself in a run that is not judged); None when the judge must be called."""
        if not job.spec.judged:
            return stored
        return self._suite.reuse(job.spec, job.case, job.base, stored)

    def _hand_on(self, pool: ThreadPoolExecutor, task: Callable[[Any, Any, Any], None],
                 job: Job[RunT, ItemT, RecordT], drawing: StoredT | DrawnT,
                 future: Future[OutcomeT | StoredT]) -> None:
        try:
            pool.submit(task, job, drawing, future)
        except RuntimeError as exc:  # the pool is shut down: the session is ending
            future.set_exception(ItemError(f"not judged: the run is stopping ({exc})"))
            self._slots.release()

    def _store_into(self, job: Job[RunT, ItemT, RecordT], drawn: DrawnT,
                    future: Future[OutcomeT | StoredT]) -> None:
        try:
            if measures_apart(job.spec):
                drawn = self._suite.measured_apart(job.spec, drawn, self._measuring_processes)
            stored = self._suite.store(job.spec, drawn)
        except BaseException as exc:
            future.set_exception(exc)
            self._slots.release()
            return
        self._to_judge(job, stored, future)

    def _measuring_processes(self) -> ProcessPoolExecutor:
        # Imported at the first sheet measured apart: most runs never start these processes.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with self._apart_lock:
            if self._apart is None:
                self._apart = ProcessPoolExecutor(
                    max_workers=MEASURING_PROCESSES,
                    mp_context=multiprocessing.get_context("spawn"))
            return self._apart

    def _to_judge(self, job: Job[RunT, ItemT, RecordT], stored: StoredT,
                  future: Future[OutcomeT | StoredT]) -> None:
        """Judge here or in the pool (``judged_in_place``): a hop to a pool thread costs a
        judge that computes on the CPU more than it could overlap."""
        if judged_in_place(job.spec):
            self._judge_into(job, stored, future)
        else:
            self._hand_on(self._pool, self._judge_into, job, stored, future)

    def _judge_into(self, job: Job[RunT, ItemT, RecordT], stored: StoredT,
                    future: Future[OutcomeT | StoredT]) -> None:
        try:
            if not job.spec.judged:
                future.set_result(stored)
                return
            future.set_result(self._judged_within_budget(job, stored))
        except BaseException as exc:
            future.set_exception(exc)
        finally:
            self._slots.release()


Task = tuple[Job[RunT, ItemT, RecordT], Future[OutcomeT]]
Work = list[Task[RunT, ItemT, RecordT, OutcomeT]]
Queue = deque[Task[RunT, ItemT, RecordT, OutcomeT]]


def _next_group(work: Queue[RunT, ItemT, RecordT, OutcomeT]
                ) -> Work[RunT, ItemT, RecordT, OutcomeT]:
    """The next consecutive jobs of one run, as many as its batch size allows, taken off."""
    return [work.popleft() for _ in range(_group_size(work))]


def _peek_group(work: Queue[RunT, ItemT, RecordT, OutcomeT]
                ) -> Work[RunT, ItemT, RecordT, OutcomeT]:
    """The group ``_next_group`` would take, left in place."""
    return [work[i] for i in range(_group_size(work))]


def _group_size(work: Queue[RunT, ItemT, RecordT, OutcomeT]) -> int:
    spec = work[0][0].spec
    size = 1
    while size < min(len(work), max(1, spec.batch_size)) and work[size][0].spec is spec:
        size += 1
    return size
