"""A progress line for long runs: done / total, errors, running Overall, spend and an ETA.

Printed by the controller (also under xdist) at most every ``every_s`` seconds and once at the
end, so a long run shows where it is without drowning pytest's own output.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class Progress:
    def __init__(self, every_s: float, write: Callable[[str], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self.write = write
        self.clock = clock
        self.total = 0
        self.done = 0
        self.errors = 0
        self.overall_sum = 0.0
        self.overall_n = 0
        self.spent_usd = 0.0
        self.spent_known = True  # False once an item's judgment had an unknown cost
        self.started = clock()
        self.last = self.started

    def expect(self, total: int) -> None:
        self.total = max(self.total, total)

    def item(self, overall: float | None, error: bool, spent_usd: float | None) -> None:
        """One finished item; ``spent_usd`` is what judging it cost now, None if unknown."""
        self.done += 1
        self.errors += error
        if overall is not None:
            self.overall_sum += overall
            self.overall_n += 1
        if spent_usd is None:
            self.spent_known = False
        else:
            self.spent_usd += spent_usd
        now = self.clock()
        if self.every_s > 0 and (now - self.last >= self.every_s or self.done == self.total):
            self.last = now
            self.write(self.line(now))

    def line(self, now: float) -> str:
        elapsed = now - self.started
        overall = "-" if not self.overall_n else f"{self.overall_sum / self.overall_n:.2f}"
        total = self.total or self.done
        if 0 < self.done < total:
            eta = _duration(elapsed / self.done * (total - self.done))
        else:
            eta = "0s" if self.done >= total else "?"
        return (f"[imagetime] {self.done}/{total} done, {self.errors} errors, Overall {overall}, "
                f"spent {self._spent()}, elapsed {_duration(elapsed)}, ETA {eta}")

    def _spent(self) -> str:
        if self.spent_known:
            return f"${self.spent_usd:.2f}"
        # Never $0.00 for calls of no known price: the known part, and that more is unknown.
        return "unknown" if not self.spent_usd else f"${self.spent_usd:.2f} + unknown"


def _duration(seconds: float) -> str:
    seconds = max(0, math.ceil(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
