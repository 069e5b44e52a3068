"""Working ahead of the items: a pool that draws and judges the items of this process in
the order pytest will ask for them.

Drawing is serialised per backend (``TempvizRun.drawing``) and judging is network-bound, so
``workers`` threads overlap one image's drawing with other images' questions. Results are
small (answers, not images), so finished ones simply wait for their item. Under xdist a
worker does not know its items ahead; there each item runs when its turn comes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

R = TypeVar("R")
Job = Callable[[], R]


class Lookahead(Generic[R]):
    def __init__(self, workers: int) -> None:
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers),
                                        thread_name_prefix="imagetime-tempviz")
        self._futures: dict[str, Future[R]] = {}
        self._lock = threading.Lock()
        self.planned = False

    def plan(self, jobs: Sequence[tuple[str, Job[R]]]) -> None:
        """Start the jobs, in order; each waits in the pool's queue for a free thread."""
        if self.planned:
            return
        self.planned = True
        with self._lock:
            for key, job in jobs:
                self._futures.setdefault(key, self._pool.submit(job))

    def result(self, key: str, job: Job[R]) -> R:
        """The job's result, waiting for it if it is under way; run here if never planned.
        Raises what the job raised."""
        with self._lock:
            future = self._futures.pop(key, None)
        return job() if future is None else future.result()

    def close(self) -> None:
        """Drop the jobs not started and wait for those running."""
        self._pool.shutdown(wait=True, cancel_futures=True)
