"""What one run of ``imagetime tempviz judge``, ``vqa-questions`` or ``vqa-answer`` asked,
reused from the store and spent, the ``--max-cost`` budget that stops it asking, and the
summary line it prints at the end."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from ...rubric.judgment import JudgeError
from .answer_store import Slot, Stored

NOT_ASKED = "not asked: --max-cost reached"
# A call's answer as stored, its raw reply, and its cost in USD (0 without a price).
Reply = tuple[Any, str, float]


class NotAsked(JudgeError):
    """The budget is spent: the answer was not asked for."""


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


class Tally:
    """Counts and costs of one run, shared by its threads."""

    def __init__(self, model: str, priced: bool, max_cost_usd: float | None = None) -> None:
        if max_cost_usd is not None and not priced:
            raise ValueError(f"--max-cost needs the price of {model!r}, and none is known: "
                             "give --price IN,OUT (USD per 1M tokens)")
        self.model = model
        self.priced = priced
        self.max_cost_usd = max_cost_usd
        self.asked = self.reused = self.errors = self.unstored = 0
        self.spent_usd = 0.0
        self.reused_usd: float | None = 0.0
        self.unstored_reason = ""
        self._lock = threading.Lock()

    def reuse(self, stored: Stored) -> Any:
        """Count a stored answer; its value."""
        with self._lock:
            self.reused += 1
            self.reused_usd = None if self.reused_usd is None or stored.cost_usd is None \
                else self.reused_usd + stored.cost_usd
        return stored.value

    def fail(self, count: int = 1) -> None:
        with self._lock:
            self.errors += count

    def ask(self, slot: Slot, call: Callable[[], Reply], about: Mapping[str, Any]) -> Any:
        """The answer ``call`` gets, stored and its cost counted; NotAsked once the budget is
        spent, JudgeError or OSError when the call fails (then nothing is stored)."""
        with self._lock:
            if self.max_cost_usd is not None and self.spent_usd >= self.max_cost_usd:
                raise NotAsked(f"{NOT_ASKED} (${self.spent_usd:.4f} of "
                               f"${self.max_cost_usd:.4f} spent)")
        value, content, cost = call()
        with self._lock:
            self.asked += 1
            self.spent_usd += cost
        try:
            slot.keep(value, content, cost if self.priced else None, about)
        except OSError as exc:  # the answer is used; the next run asks it again
            with self._lock:
                self.unstored += 1
                self.unstored_reason = self.unstored_reason or str(exc)
        return value

    def summary(self) -> str:
        spent = _usd(self.spent_usd) if self.priced or not self.asked else \
            f"unknown (no price for {self.model!r}; give --price IN,OUT)"
        reused = f", {_usd(self.reused_usd)} reused from the store" if self.reused else ""
        return (f"asked {self.asked}, reused {self.reused} from the store, errors "
                f"{self.errors}, spent {spent}{reused}")

    def warnings(self) -> list[str]:
        if not self.unstored:
            return []
        return [f"{self.unstored} answers could not be stored ({self.unstored_reason}); the "
                "next run asks them again"]
