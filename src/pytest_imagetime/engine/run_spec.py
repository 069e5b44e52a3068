"""What every item of one ImageTime run (model x judge x setting) shares.

Apart from the runner, which imports the store's codecs, the records and the scoring: a
session that only collects needs the spec of each run, not the code that runs its items.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..sheet.prompts import SHEET

if TYPE_CHECKING:
    from ..judges.base import Judge
    from ..models.base import ImageModel
    from ..rubric.facts import Setting
    from ..store.paths import RunPaths
    from .references import References


@dataclass(frozen=True)
class RunSpec:
    """One model x judge x setting of a session, with what every item of it shares."""

    model: ImageModel
    judge: Judge
    paths: RunPaths
    setting: Setting
    size: int
    run_seed: int
    regenerate: bool = False
    rejudge: bool = False
    repeats: int = 1  # judgments per sheet, combined conservatively (repeats.py)
    grid: tuple[int, int] = SHEET  # a dense grid (4xN) is generated, never judged
    references: References | None = None  # the scaffold setting's initial-state images
    batch_size: int = 1  # sheets per generate_batch call, for backends that batch

    @property
    def judged(self) -> bool:
        return self.grid == SHEET
