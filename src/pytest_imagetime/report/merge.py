"""``imagetime merge``: shards of one benchmark run joined into the report of an unsharded run.

Each shard (``--imagetime-shard=K/N``) writes its own output directory. Merging checks that
the shards ran the same model, judge, setting, size, seed, threshold and rubric on the same
suite, that every shard 1..N is there exactly once and covers its share, and refuses a case
that two shards scored differently; it copies images and judgments into one output directory
and aggregates all items again: the result is the report an unsharded run gives. A merge
that does not cover the suite is refused unless it is asked for as partial, and its report
then says it is partial.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from ..backends.prices import sum_costs
from ..engine.record import ItemRecord
from ..engine.runner import now
from ..store.atomic import read_json
from .coverage import Suite, coverage_json
from .json_report import build_report, case_set, record_from_json, validate_report, write_report
from .junit import write_junit
from .scores_csv import JUDGE_PROMPT, SCORES_CSV, write_scores_csv

MUST_AGREE = ("model", "judge", "setting", "size", "seed", "pass_threshold", "rubric_version")


class MergeError(ValueError):
    pass


def _reports(part: Path) -> dict[str, tuple[Path, dict[str, Any]]]:
    found = {}
    for path in sorted(part.glob("*/*/report.json")):
        report = read_json(path)
        if not isinstance(report, dict):
            raise MergeError(f"{path}: not a readable report")
        if "items" in report and "coverage" not in report:
            raise MergeError(f"{path}: written before reports said which cases they cover, so "
                             f"it cannot be checked for a missing shard; run its command again "
                             f"(stored images and judgments are reused) and merge the new report")
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


def _shard_problems(run: str, members: Sequence[tuple[Path, dict[str, Any]]]
                    ) -> tuple[list[str], list[str]]:
    """Shards given twice, and what else is missing or mixed up in a set of shards; nothing
    for a whole set, or for parts that are not shards."""
    shards = [(path, report["coverage"]["shard"]) for path, report in members]
    if all(shard is None for _, shard in shards):
        return [], []
    unsharded = [str(path) for path, shard in shards if shard is None]
    if unsharded:
        return [], [f"{run}: {', '.join(unsharded)} is not a shard, the others are: merge "
                    f"shards of one run, or unsharded parts"]
    counts = {int(shard.split("/")[1]) for _, shard in shards}
    if len(counts) > 1:
        listed = ", ".join(f"{path}: {shard}" for path, shard in shards)
        return [], [f"{run}: shards of different counts ({listed}); merge the N shards of one "
                    f"--imagetime-shard=K/N run"]
    (count,) = counts
    given: dict[int, list[Path]] = {}
    for path, shard in shards:
        given.setdefault(int(shard.split("/")[0]), []).append(path)
    duplicated = [f"{run}: shard {k}/{count} is given {len(paths)} times: "
                  f"{', '.join(map(str, paths))}; give each shard once"
                  for k, paths in sorted(given.items()) if len(paths) > 1]
    problems = []
    missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in given]
    if missing:
        problems.append(f"{run}: shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
                        f"missing (given: {', '.join(f'{k}/{count}' for k in sorted(given))})")
    for path, report in members:
        coverage = report["coverage"]
        if coverage["missing"]:
            problems.append(f"{run}: shard {coverage['shard']} ({path}) covers "
                            f"{coverage['scope'] - coverage['missing']} of its "
                            f"{coverage['scope']} cases (a -k/-m selection, or a run that "
                            f"stopped early)")
    return duplicated, problems


def _suite(run: str, members: Sequence[tuple[Path, dict[str, Any]]]) -> dict[str, Any]:
    first_path, first = members[0]
    suite: dict[str, Any] = first["coverage"]["suite"]
    for path, report in members[1:]:
        other = report["coverage"]["suite"]
        if other["sha256"] != suite["sha256"]:
            raise MergeError(f"{run}: {first_path} ran suite {suite['name']} ({suite['cases']} "
                             f"cases), {path} suite {other['name']} ({other['cases']} cases, "
                             f"other case texts): only shards of one suite can be merged")
    return suite


def _relocated(record: ItemRecord, recorded_run_dir: str, run_dir: Path) -> ItemRecord:
    """The record with its files where the part is now: an artifact downloaded elsewhere
    than where its shard ran holds them at the same place under its run directory."""
    def located(recorded: str | None) -> str | None:
        if not recorded or Path(recorded).is_file():
            return recorded
        try:
            below = Path(recorded).relative_to(Path(recorded_run_dir).parent)
        except ValueError:
            return recorded
        return str(run_dir.parent / below)  # named by the error if it is not there either

    return replace(record, image=located(record.image), judgment=located(record.judgment))


def _copy_prompt(members: Sequence[tuple[Path, dict[str, Any]]], run_dir: Path) -> None:
    """The shards' judge prompt text (one judge config: the same text) kept with the merge."""
    for path, _ in members:
        prompt = path.parent / JUDGE_PROMPT
        if prompt.is_file():
            _copy(str(prompt), run_dir / JUDGE_PROMPT)
            return


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


def merge(parts: Sequence[Path], out: Path, partial: bool = False) -> list[Path]:
    """Merge shard output directories into ``out``; returns the reports written. Refuses a
    set of shards with one missing or given twice, or a merge that does not cover the suite,
    unless ``partial``; a duplicated shard is refused even then."""
    out = out.resolve()
    runs: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    for part in parts:
        for run, found in _reports(part).items():
            runs.setdefault(run, []).append(found)
    written: list[Path] = []
    everything: list[ItemRecord] = []
    messages: dict[str, str] = {}
    merging: list[tuple[str, list[tuple[Path, dict[str, Any]]], dict[str, Any]]] = []
    problems: list[str] = []
    for run, members in sorted(runs.items()):
        _check_same_run(run, members)
        suite = _suite(run, members)
        duplicated, issues = _shard_problems(run, members)
        if duplicated:
            raise MergeError("\n".join(duplicated))
        covered = len({i["case_id"] for _, r in members for i in r["items"]}) - _outside(members)
        if not issues and covered < suite["cases"]:
            issues.append(f"{run}: the parts cover {covered} of the {suite['cases']} cases "
                          f"of suite {suite['name']}")
        problems.extend(issues)
        merging.append((run, members, suite))
    if problems and not partial:
        raise MergeError("\n".join(problems) + "\nrefused: --partial merges them as a partial "
                         "run (its report says so)")
    for run, members, suite in merging:
        records: dict[str, ItemRecord] = {}
        for path, report in members:
            recorded_run_dir = str(report["manifest"].get("run_dir") or path.parent)
            for item in report["items"]:
                record = _relocated(record_from_json(item), recorded_run_dir, path.parent)
                if record.status != "error":
                    gone = [f for f in (record.image, record.judgment)
                            if not f or not Path(f).is_file()]
                    if gone:
                        raise MergeError(f"{run}: {record.key} of {path}: its "
                                         f"{'image' if gone[0] == record.image else 'judgment'} "
                                         f"{gone[0]} is not there; merge the parts with "
                                         f"their images and judgments")
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
        report["coverage"] = _merged_coverage(report["items"], suite, _outside(members))
        report["spent_usd"] = sum_costs(r.get("spent_usd", 0.0) for _, r in members)
        limits = {r.get("limit") for _, r in members}
        if len(limits) == 1 and None not in limits:  # shards of one limited run stay limited
            report["limit"] = limits.pop()
        validate_report(report)
        write_report(run_dir / "report.json", report)
        write_scores_csv(run_dir / SCORES_CSV, report["items"])
        _copy_prompt(members, run_dir)
        written.append(run_dir / "report.json")
        everything.extend(merged)
    write_junit(out / "junit.xml", everything, messages)
    return written


def _outside(members: Sequence[tuple[Path, dict[str, Any]]]) -> int:
    return sum(int(report["coverage"]["outside"]) for _, report in members)


def _merged_coverage(items: Sequence[dict[str, Any]], suite: dict[str, Any],
                     outside: int) -> dict[str, Any]:
    """The coverage of merged items: the parts' suite is known by its hash, not its cases, so
    their items are the suite's but for the ``outside`` ones the parts counted."""
    known = Suite(suite["name"], {i["case_id"]: i["case_sha256"] for i in items})
    coverage = coverage_json(items, known, None, len(items))
    coverage["suite"] = dict(suite)
    coverage["outside"] = outside
    coverage["cases"] = max(0, coverage["cases"] - outside)
    coverage["scope"] = suite["cases"]
    coverage["missing"] = max(0, suite["cases"] - coverage["cases"])
    coverage["complete"] = coverage["missing"] == 0 and outside == 0
    return coverage
