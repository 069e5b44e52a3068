"""Overlapping generation and judging within one pytest process.

Generation is GPU-bound, judging network-bound. Told the items this process will run, in
order, the pipeline generates them one after another on a background thread and hands each
sheet to a pool of judge threads as soon as it exists, so the wall time tends to
max(total generation, total judging / concurrency) instead of their sum. An item's setup
then only waits for its own result.

Memory stays flat: at most ``lookahead`` sheets are generated and not yet judged (images are
on disk; the pool holds only those in flight), and results are dropped once taken.
The concurrency bound is per process: under ``-n N`` a run makes up to N x concurrency calls
at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from .cases import Case
from .record import ItemRecord
from .runner import ItemError, ItemOutcome, RunSpec, Sheet, generate_sheet, judge_sheet


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


class Pipeline:
    def __init__(self, concurrency: int, lookahead: int, budget: CostBudget | None = None,
                 generate: Callable[[RunSpec, Case], Sheet] = generate_sheet,
                 judge: Callable[[RunSpec, Case, ItemRecord, Sheet], ItemOutcome] = judge_sheet,
                 ) -> None:
        self._pool = ThreadPoolExecutor(max_workers=concurrency,
                                        thread_name_prefix="imagetime-judge")
        self._slots = threading.BoundedSemaphore(max(1, lookahead))
        self._budget = budget or CostBudget(None)
        self._generate = generate
        self._judge = judge
        self._futures: dict[str, Future[ItemOutcome]] = {}
        self._lock = threading.Lock()
        # One generation at a time per process: backends need not be thread-safe.
        self._generating = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def planned(self) -> bool:
        return self._thread is not None

    def plan(self, jobs: Sequence[Job]) -> None:
        """Start working through ``jobs`` in the order they will be asked for."""
        if self._thread is not None:
            return
        work: list[tuple[Job, Future[ItemOutcome]]] = []
        with self._lock:
            for job in jobs:
                future = self._futures.setdefault(job.key, Future())
                work.append((job, future))
        # The thread keeps its own references: an item may take its future out of the table
        # (and wait on it) before the thread reaches it.
        self._thread = threading.Thread(target=self._generate_all, args=(work,),
                                        name="imagetime-generate", daemon=True)
        self._thread.start()

    def outcome(self, job: Job) -> ItemOutcome:
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
        self._pool.shutdown(wait=True, cancel_futures=True)

    # ------------------------------------------------------------ internals

    def _run_inline(self, job: Job) -> ItemOutcome:
        with self._generating:
            sheet = self._generate(job.spec, job.case)
        self._budget.check()
        return self._judged(job, sheet)

    def _judged(self, job: Job, sheet: Sheet) -> ItemOutcome:
        outcome = self._judge(job.spec, job.case, job.base, sheet)
        if outcome.record.judged:
            self._budget.add(outcome.record.cost_usd)
        return outcome

    def _generate_all(self, work: list[tuple[Job, Future[ItemOutcome]]]) -> None:
        try:
            self._generate_each(work)
        finally:
            # Stopped or broken: no item may wait forever for a sheet that will not come.
            for _job, future in work:
                if not future.done() and not future.running() \
                        and future.set_running_or_notify_cancel():
                    future.set_exception(ItemError("not generated: the run is stopping"))

    def _generate_each(self, work: list[tuple[Job, Future[ItemOutcome]]]) -> None:
        for job, future in work:
            while not self._slots.acquire(timeout=0.1):
                if self._stop.is_set():
                    return
            if self._stop.is_set():
                self._slots.release()
                return
            if not future.set_running_or_notify_cancel():
                self._slots.release()
                continue
            try:
                with self._generating:
                    sheet = self._generate(job.spec, job.case)
            except BaseException as exc:  # the item reports it; the run goes on
                future.set_exception(exc)
                self._slots.release()
                continue
            try:
                self._pool.submit(self._judge_into, job, sheet, future)
            except RuntimeError as exc:  # the pool is shut down: the session is ending
                future.set_exception(ItemError(f"not judged: the run is stopping ({exc})"))
                self._slots.release()

    def _judge_into(self, job: Job, sheet: Sheet, future: Future[ItemOutcome]) -> None:
        try:
            self._budget.check()
            future.set_result(self._judged(job, sheet))
        except BaseException as exc:
            future.set_exception(exc)
        finally:
            self._slots.release()
