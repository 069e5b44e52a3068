"""The TempViz look-ahead pool: planned jobs run ahead in order, results wait for their item."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_imagetime.tempviz.lookahead import Lookahead


def _job(value: int, ran: list[int]) -> Callable[[], int]:
    def run() -> int:
        ran.append(value)
        return value * 10
    return run


def test_an_unplanned_key_runs_in_the_caller() -> None:
    pool: Lookahead[int] = Lookahead(workers=2)
    caller = threading.current_thread()
    seen: list[threading.Thread] = []

    def job() -> int:
        seen.append(threading.current_thread())
        return 7

    try:
        assert pool.result("a", job) == 7
        assert seen == [caller]
    finally:
        pool.close()


def test_planned_jobs_run_in_the_pool_once() -> None:
    pool: Lookahead[int] = Lookahead(workers=1)
    ran: list[int] = []
    try:
        pool.plan([(str(i), _job(i, ran)) for i in range(4)])
        pool.plan([("9", _job(9, ran))])  # a second plan is ignored
        assert [pool.result(str(i), _job(-1, ran)) for i in range(4)] == [0, 10, 20, 30]
        assert ran == [0, 1, 2, 3]  # one worker: in the planned order
        assert pool.planned
        assert pool.result("0", _job(5, ran)) == 50  # taken already: runs here
    finally:
        pool.close()


def test_a_jobs_exception_reaches_its_item() -> None:
    pool: Lookahead[int] = Lookahead(workers=0)  # at least one thread

    def broken() -> int:
        raise RuntimeError("judge down")

    try:
        pool.plan([("a", broken)])
        with pytest.raises(RuntimeError, match="judge down"):
            pool.result("a", broken)
    finally:
        pool.close()


def test_close_drops_jobs_not_started() -> None:
    pool: Lookahead[int] = Lookahead(workers=1)
    started, release = threading.Event(), threading.Event()
    ran: list[int] = []

    def blocking() -> int:
        started.set()
        release.wait(10)
        return 1

    pool.plan([("first", blocking), *((str(i), _job(i, ran)) for i in range(3))])
    assert started.wait(10)
    closer = threading.Thread(target=pool.close)
    closer.start()
    release.set()
    closer.join(10)
    assert not closer.is_alive()
    assert ran == []


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 50), unique=True, max_size=12), st.integers(1, 4),
       st.randoms(use_true_random=False))
def test_every_key_gets_its_own_result_in_any_order(values: list[int], workers: int,
                                                    order: random.Random) -> None:
    pool: Lookahead[int] = Lookahead(workers=workers)
    ran: list[int] = []
    try:
        pool.plan([(str(v), _job(v, ran)) for v in values])
        asked = list(values)
        order.shuffle(asked)
        assert [pool.result(str(v), _job(-1, ran)) for v in asked] == [v * 10 for v in asked]
        assert sorted(ran) == sorted(values)
    finally:
        pool.close()
