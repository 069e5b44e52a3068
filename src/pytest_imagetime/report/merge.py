"""``imagetime merge``: shards of one benchmark run joined into the report of an unsharded run.

Each shard (``--imagetime-shard=K/N``) writes its own output directory. Merging checks that
the shards ran the same model, judge, setting, size, seed, threshold and rubric, refuses
a case that two shards scored differently, copies images and judgments into one output
directory, and aggregates all items again: the result is the report an unsharded run gives.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..judges.prices import sum_costs
from ..record import ItemRecord
from ..runner import now
from ..store import read_json
from .json_report import build_report, case_set, record_from_json, validate_report, write_report
from .junit import write_junit

MUST_AGREE = ("model", "judge", "setting", "size", "seed", "pass_threshold", "rubric_version")


class MergeError(ValueError):
    pass


def _reports(part: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    found = {}
    for path in sorted(part.glob("*/*/report.json")):
        report = read_json(path)
        if not isinstance(report, dict):
            raise MergeError(f"{path}: not a readable report")
        try:
            validate_report(report)
        except Exception as exc:
            raise MergeError(f"{path}: not a valid ImageTime report: {exc}") from None
        found[str(path.parent.relative_to(part))] = (path, report)
    if not found:
        raise MergeError(f"{part}: no run directories with a report.json (expected "
                         "PART/<model>/<judge>/report.json)")
    return found


def _check_same_run(run: str, members: Sequence[tuple[Path, dict[str, Any]]]) -> None:
    first_path, first = members[0]
    for path, report in members[1:]:
        for key in MUST_AGREE:
            a, b = first["manifest"].get(key), report["manifest"].get(key)
            if a != b:
                raise MergeError(f"{run}: {key} differs between {first_path} ({a!r}) and "
                                 f"{path} ({b!r}); only shards of one run can be merged")


def _copy(source: str | None, target: Path) -> str | None:
    if not source:
        return source
    src = Path(source)
    if src.is_file() and src.resolve() != target.resolve():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
        sidecar = src.with_suffix(".json")
        if src.suffix == ".png" and sidecar.is_file():
            shutil.copy2(sidecar, target.with_suffix(".json"))
    return str(target)


def merge(parts: Sequence[Path], out: Path) -> list[Path]:
    """Merge shard output directories into ``out``; returns the reports written."""
    out = out.resolve()
    runs: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for part in parts:
        for run, found in _reports(part).items():
            runs.setdefault(run, []).append(found)
    written: list[Path] = []
    everything: list[ItemRecord] = []
    messages: dict[str, str] = {}
    for run, members in sorted(runs.items()):
        _check_same_run(run, members)
        records: dict[str, ItemRecord] = {}
        for path, report in members:
            for item in report["items"]:
                record = record_from_json(item)
                seen = records.get(record.key)
                if seen is not None and (seen.scores, seen.status) != (record.scores,
                                                                        record.status):
                    raise MergeError(f"{run}: {record.key} was scored differently by two shards "
                                     f"(one of them {path})")
                records[record.key] = record
        run_dir = out / run
        model_dir = run_dir.parent
        merged = []
        for record in records.values():
            values: dict[str, Any] = {f.name: getattr(record, f.name) for f in fields(record)}
            values["run_dir"] = str(run_dir)
            values["image"] = _copy(record.image, model_dir / "images" / f"{record.case_id}.png")
            values["judgment"] = _copy(record.judgment,
                                       run_dir / "judgments" / f"{record.case_id}.json")
            merged.append(ItemRecord(**values))
            if record.error:
                messages[record.key] = record.error
        first = members[0][1]["manifest"]
        manifest = {k: v for k, v in first.items() if k != "environment"}
        manifest.update(run_dir=str(run_dir), shard=None,
                        merged_from=[{"report": str(p), "shard": r["manifest"].get("shard"),
                                      "environment": r["manifest"].get("environment")}
                                     for p, r in members])
        report = build_report(manifest, merged, now())
        report["manifest"]["cases"] = case_set(merged)
        report["spent_usd"] = sum_costs(r.get("spent_usd", 0.0) for _, r in members)
        validate_report(report)
        write_report(run_dir / "report.json", report)
        written.append(run_dir / "report.json")
        everything.extend(merged)
    write_junit(out / "junit.xml", everything, messages)
    return written
