"""Which stored run of a baseline directory a candidate run is gated on.

A baseline directory is an output directory: ``<model>/<judge>/report.json`` per run. A new
checkpoint usually comes under a new model spec (``files:ckpt2`` after ``files:ckpt1``), so
the run stored under the candidate's own name is taken when there is one, and otherwise the
one run of the same judge and setting, whatever its model is called. Several such runs are
ambiguous: the error lists them and names the option value that picks one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..store.atomic import read_json


@dataclass(frozen=True)
class StoredRun:
    report: Path  # its report.json
    model: str  # the model spec its manifest names
    judge_dir: str  # the judge's directory name, as the run directory spells it
    setting: str


class AmbiguousBaseline(ValueError):
    def __init__(self, folder: Path, wanted: Path, runs: Sequence[StoredRun]) -> None:
        self.runs = tuple(runs)
        listed = "; ".join(f"{run.model} ({run.report})" for run in runs)
        super().__init__(
            f"no baseline at {wanted}, and {folder} holds {len(runs)} runs of this judge and "
            f"setting: {listed}")

    def how_to_pick(self, usage: str) -> str:
        """``usage`` shows where the report goes, with ``{report}`` for its path."""
        return (f"pick one by naming its report ({usage.format(report=self.runs[0].report)}),"
                f" or remove the runs that are not the baseline")


def stored_runs(folder: Path) -> list[StoredRun]:
    """The readable runs of an output directory, in path order."""
    found = []
    for path in sorted(folder.glob("*/*/report.json")):
        report = read_json(path)
        if not isinstance(report, dict):
            continue
        try:
            manifest = report["manifest"]
            found.append(StoredRun(path, str(manifest["model"]["spec"]), path.parent.name,
                                   str(manifest["setting"])))
        except (KeyError, TypeError):
            continue  # not a report of this plugin: not a candidate
    return found


def baseline_report(folder: Path, run: Path, setting: str) -> Path | None:
    """The report in ``folder`` that the run at ``run`` (``<model dir>/<judge dir>``,
    relative) is gated on, or None when the folder holds none for its judge and setting.
    Raises AmbiguousBaseline when it holds several and none under the run's own name."""
    own = folder / run / "report.json"
    if own.is_file():
        return own
    same = [stored for stored in stored_runs(folder)
            if stored.judge_dir == run.name and stored.setting == setting]
    if not same:
        return None
    if len(same) > 1:
        raise AmbiguousBaseline(folder, own, same)
    return same[0].report


def judges_present(folder: Path) -> list[str]:
    """'<model> (<judge dir>, <setting>)' of every run a folder holds, for an error message."""
    return [f"{run.model} ({run.judge_dir}, {run.setting})" for run in stored_runs(folder)]
