"""Where a run keeps its files: the output directory's layout, named by model, setting, grid
and judge.

Layout under the output directory (``reports/`` by default)::

    <model>[@<setting>][@grid<R>x<C>]/images/<case>.png   the sheet, as generated
    <model>[@<setting>]/images/<case>.json      its generation record
    <model>[@<setting>]/<judge>/judgments/<case>.json
    <model>[@<setting>]/<judge>/report.json     the aggregate report of the last session

Images are shared by every judge of a model; a run directory is one model x one judge.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from ..rubric.facts import Setting


def with_setting(name: str, setting: str, grid: tuple[int, int] = (2, 2)) -> str:
    """A model spec or directory as runs name it: ``@scaffold`` added outside prompt-only,
    ``@grid4x2`` for a dense grid."""
    named = name if setting == "prompt-only" else f"{name}@{setting}"
    return named if grid == (2, 2) else f"{named}@grid{grid[0]}x{grid[1]}"


def dir_slug(text: str) -> str:
    """A directory name for a model or judge spec: 'files:/data/x' -> 'files-data-x'."""
    slug = re.sub(r"[^A-Za-z0-9._@-]+", "-", text).strip("-.")
    return slug[:80] or "default"


@dataclass(frozen=True)
class RunPaths:
    """Where one model x judge x setting keeps its files."""

    out: Path
    model: str
    judge: str
    setting: Setting
    grid: tuple[int, int] = (2, 2)

    # Cached: every item asks for them several times.
    @functools.cached_property
    def model_dir(self) -> Path:
        return self.out / with_setting(dir_slug(self.model), self.setting, self.grid)

    @functools.cached_property
    def run_dir(self) -> Path:
        return self.model_dir / dir_slug(self.judge)

    @functools.cached_property
    def _images(self) -> Path:
        return self.model_dir / "images"

    @functools.cached_property
    def _judgments(self) -> Path:
        return self.run_dir / "judgments"

    def image(self, case_id: str) -> Path:
        return self._images / f"{case_id}.png"

    def image_record(self, case_id: str) -> Path:
        return self._images / f"{case_id}.json"

    def judgment(self, case_id: str) -> Path:
        return self._judgments / f"{case_id}.json"

    @property
    def report(self) -> Path:
        return self.run_dir / "report.json"
