"""What differs between the suites the item engine runs: the ``Suite`` a pipeline is made
with, and the ``EngineRun`` facts it reads of each run.

A suite says how an item is looked up in the store, drawn, stored, judged (or answered from
stored judgments) and what a judgment cost; the pipeline (``pipeline.py``) does the drawing
order, the look-ahead, the concurrency, the cost budget and the error handling for every
suite alike. ImageTime's suite is ``runner.ImagetimeSuite``, TempViz's
``tempviz.runner.TempvizSuite``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from .item_error import ItemError

if TYPE_CHECKING:  # typing_extensions is there wherever mypy is; Python 3.13 has TypeIs
    from typing_extensions import TypeIs

    from ..models.base import ImageModel


class EngineRun(Protocol):
    """What the engine reads of a run (a model x judge of a session)."""

    @property
    def model(self) -> ImageModel: ...

    @property
    def judge(self) -> object: ...

    @property
    def batch_size(self) -> int: ...

    @property
    def judged(self) -> bool: ...


RunT = TypeVar("RunT", bound=EngineRun)
ItemT = TypeVar("ItemT")  # what an item asks for: a case, a prompt
RecordT = TypeVar("RecordT")  # an item's record before its outcome is known
StoredT = TypeVar("StoredT")  # an image the store holds, ready to judge
DrawnT = TypeVar("DrawnT")  # an image just drawn, not yet stored
OutcomeT = TypeVar("OutcomeT")  # a judged item
BackendCall = tuple[str, dict[str, Any]]  # a backend method and its keyword arguments


class Suite(ABC, Generic[RunT, ItemT, RecordT, StoredT, DrawnT, OutcomeT]):
    """The stages of one suite's items; each raises ItemError when the item cannot go on."""

    @abstractmethod
    def lookup(self, run: RunT, item: ItemT) -> StoredT | None:
        """The item's stored image when its inputs are unchanged; None when it is drawn."""

    @abstractmethod
    def draw(self, run: RunT, items: Sequence[ItemT]) -> Sequence[StoredT | DrawnT | ItemError]:
        """Each item's stored image, else a new drawing, in order; failures as ItemError."""

    @abstractmethod
    def is_drawn(self, drawing: StoredT | DrawnT) -> TypeIs[DrawnT]:
        """Whether ``draw`` drew this one anew (then it is stored before it is judged)."""

    @abstractmethod
    def store(self, run: RunT, drawn: DrawnT) -> StoredT:
        """Write a new drawing to the store, with what it measures."""

    @abstractmethod
    def reuse(self, run: RunT, item: ItemT, base: RecordT, stored: StoredT) -> OutcomeT | None:
        """The outcome from stored judgments alone; None when the judge must be asked."""

    @abstractmethod
    def judge(self, run: RunT, item: ItemT, base: RecordT, stored: StoredT) -> OutcomeT:
        """Ask the judge (or reuse what it answered) and make the item's outcome."""

    @abstractmethod
    def spent_usd(self, outcome: OutcomeT) -> float:
        """What judging this outcome cost in this session (0 when it was reused)."""

    def calls_ahead(self, run: RunT, items: Sequence[ItemT]) -> list[BackendCall] | None:
        """The backend calls ``draw`` will make for these items, for a backend drawing in a
        process of its own (``draw_ahead``); None when the suite cannot tell ahead."""
        return None

    def measured_apart(self, run: RunT, drawn: DrawnT,
                       processes: Callable[[], Executor]) -> DrawnT:
        """The drawing with what ``store`` would compute made in ``processes``; as it came
        when there is nothing to make there."""
        return drawn
