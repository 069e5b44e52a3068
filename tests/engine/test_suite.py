"""The suite contract on its own: what a suite must implement, what it may, and the two suites
that implement it (engine/suite.py)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import pytest
from typing_extensions import TypeIs

from pytest_imagetime.engine.item_error import ItemError
from pytest_imagetime.engine.runner import ImagetimeSuite
from pytest_imagetime.engine.suite import EngineRun, Suite
from pytest_imagetime.tempviz.runner import TempvizSuite

STAGES = {"lookup", "draw", "is_drawn", "store", "reuse", "judge", "spent_usd"}


@dataclass(frozen=True)
class Run:
    """A run as the engine reads it."""

    model: Any = None
    judge: Any = None
    batch_size: int = 1
    judged: bool = True


@dataclass(frozen=True)
class Drawn:
    item: str


class WordSuite(Suite[Run, str, str, str, Drawn, str]):
    """Items are words; a stored word is upper case; judging appends the record."""

    def lookup(self, run: Run, item: str) -> str | None:
        return item.upper() if item.startswith("kept") else None

    def draw(self, run: Run, items: Sequence[str]) -> Sequence[str | Drawn | ItemError]:
        return [ItemError("model", "refused") if i == "bad" else Drawn(i) for i in items]

    def is_drawn(self, drawing: str | Drawn) -> TypeIs[Drawn]:
        return isinstance(drawing, Drawn)

    def store(self, run: Run, drawn: Drawn) -> str:
        return drawn.item.upper()

    def reuse(self, run: Run, item: str, base: str, stored: str) -> str | None:
        return None

    def judge(self, run: Run, item: str, base: str, stored: str) -> str:
        return f"{base}:{stored}"

    def spent_usd(self, outcome: str) -> float:
        return 0.0


def test_every_stage_is_abstract() -> None:
    assert Suite.__abstractmethods__ == STAGES


def test_a_suite_missing_a_stage_cannot_be_made() -> None:
    class Partial(Suite[Run, str, str, str, Drawn, str]):
        def lookup(self, run: Run, item: str) -> str | None:
            return None

    with pytest.raises(TypeError, match="abstract method"):
        Partial()  # type: ignore[abstract]


def test_the_optional_stages_default_to_nothing_ahead_and_nothing_apart() -> None:
    suite = WordSuite()
    assert suite.calls_ahead(Run(), ["a", "b"]) is None
    drawn = Drawn("a")

    def processes() -> Executor:
        raise AssertionError("no process pool is needed")

    assert suite.measured_apart(Run(), drawn, processes) is drawn


def test_a_complete_suite_runs_its_stages() -> None:
    suite, run = WordSuite(), Run()
    assert suite.lookup(run, "kept-1") == "KEPT-1" and suite.lookup(run, "new") is None
    drawn = suite.draw(run, ["new", "bad"])
    assert isinstance(drawn[1], ItemError)
    first = drawn[0]
    assert not isinstance(first, ItemError) and suite.is_drawn(first)
    assert isinstance(first, Drawn)
    stored = suite.store(run, first)
    assert not suite.is_drawn(stored)
    assert suite.judge(run, "new", "record", stored) == "record:NEW"


def test_a_run_satisfies_the_engine_run_protocol() -> None:
    run: EngineRun = Run(model=object(), judge=object())
    assert run.batch_size == 1 and run.judged


@pytest.mark.parametrize("suite", [ImagetimeSuite, TempvizSuite])
def test_both_suites_implement_every_stage(suite: type[Suite[Any, Any, Any, Any, Any, Any]]
                                           ) -> None:
    assert issubclass(suite, Suite)
    assert not inspect.isabstract(suite)
    for name in STAGES:
        assert getattr(suite, name) is not getattr(Suite, name)


def test_the_optional_stages_keep_their_signatures_in_the_suites() -> None:
    for optional in ("calls_ahead", "measured_apart"):
        base = inspect.signature(getattr(Suite, optional)).parameters
        for suite in (ImagetimeSuite, TempvizSuite):
            assert list(inspect.signature(getattr(suite, optional)).parameters) == list(base)
