"""Stored runs as labelling items: each judged item with its sheet, judgment and case."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cases.loading import case_files, load_case_file
from ...cases.model import Case, CaseFileError
from ...store.atomic import read_json
from ...store.paths import with_setting


class RunError(ValueError):
    """A run or case path that cannot be used; the message names it."""


@dataclass(frozen=True)
class RunItem:
    """One item of a stored run (one model x judge x setting)."""

    run_dir: Path
    data: dict[str, Any]  # the item as report.json holds it

    @property
    def model(self) -> str:
        """The model as the label tables key it: its spec, plus the setting outside
        prompt-only, so two settings of one model never share a key."""
        return with_setting(str(self.data["model"]), str(self.data["setting"]))

    @property
    def case_id(self) -> str:
        return str(self.data["case_id"])

    @property
    def domain(self) -> str:
        return str(self.data["domain"])

    @property
    def judge(self) -> str:
        return str(self.data["judge"])

    @property
    def image(self) -> Path | None:
        """The stored sheet: next to the run first (runs move and merge), then as recorded."""
        candidates = [self.run_dir.parent / "images" / f"{self.case_id}.png"]
        if self.data.get("image"):
            candidates.append(Path(str(self.data["image"])))
        return next((p for p in candidates if p.is_file()), None)

    def judgment(self) -> dict[str, Any] | None:
        candidates = [self.run_dir / "judgments" / f"{self.case_id}.json"]
        if self.data.get("judgment"):
            candidates.append(Path(str(self.data["judgment"])))
        for path in candidates:
            record = read_json(path)
            if isinstance(record, dict) and isinstance(record.get("judgment"), dict):
                judgment: dict[str, Any] = record["judgment"]
                return judgment
        return None


def run_dirs(paths: Sequence[str]) -> list[Path]:
    """Run directories from run directories (model/judge), model directories (one run per
    judge), report.json files or output directories."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found.append(path.parent)
        elif (path / "report.json").is_file():
            found.append(path)
        elif path.is_dir():
            reports = [*path.glob("*/report.json"), *path.glob("*/*/report.json")]
            found.extend(p.parent for p in sorted(reports))
        else:
            raise RunError(f"{raw}: no such file or directory")
    if not found:
        raise RunError(f"no report.json under {', '.join(paths)}")
    return list(dict.fromkeys(found))


def load_items(paths: Sequence[str]) -> list[RunItem]:
    items: list[RunItem] = []
    for run in run_dirs(paths):
        try:
            report = json.loads((run / "report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RunError(f"{run / 'report.json'}: cannot read: {exc}") from None
        if not isinstance(report, dict) or not isinstance(report.get("items"), list):
            raise RunError(f"{run / 'report.json'}: not an ImageTime report")
        items.extend(RunItem(run, item) for item in report["items"])
    return items


def load_cases(paths: Iterable[Path]) -> dict[str, Case]:
    """Cases by id from case files or directories of them."""
    cases: dict[str, Case] = {}
    for path in paths:
        if not path.exists():
            raise RunError(f"{path}: no such file or directory")
        for file in case_files([path]):
            try:
                cases.update((c.id, c) for c in load_case_file(file))
            except CaseFileError as exc:
                raise RunError(f"{file}: invalid case file: {str(exc).splitlines()[0]}") from None
    return cases
