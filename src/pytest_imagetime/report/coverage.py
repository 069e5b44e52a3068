"""Which cases a report covers, of which suite: a subset or a shard is never taken for a run.

A run directory's report covers every current item of that directory: the items this session
ran, and the items of the directory's last report that are still current (the same model,
judge and run settings, a case of the suite with unchanged text, its image and judgment still
stored) for cases this session did not run. So a ``-k`` or ``--lf`` rerun updates its items
in a full report instead of replacing it with a subset, and a first run of a subset is a
report that says it is partial. ``coverage`` in the report says how many of the suite's cases
it covers; every reader shows a partial report as partial (docs/shards.md).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cases.loading import builtin_cases_dir, case_files, load_case_file
from ..cases.model import Case, CaseFileError
from ..plugin.scheduling import shard_cases

PACKAGED = "imagetime"
# What makes two reports' items interchangeable: the same scores under the same conditions.
SAME_RUN = ("model", "judge", "setting", "size", "seed", "pass_threshold", "judge_repeats",
            "rubric_version")


@dataclass(frozen=True)
class Suite:
    """Every case of the case files a run collects from, before any selection."""

    name: str  # "imagetime" for the packaged cases, else the paths given
    cases: Mapping[str, str]  # case id -> hash of its text
    unreadable: tuple[str, ...] = ()  # case files that did not load (their collection failed)

    @property
    def sha256(self) -> str:
        lines = sorted(f"{case_id} {digest}" for case_id, digest in self.cases.items())
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()

    def scope(self, shard: tuple[int, int] | None) -> set[str]:
        """The suite's cases a run of ``shard`` (or an unsharded run) is meant to cover."""
        ids = list(self.cases)
        return set(ids) if shard is None else shard_cases(ids, shard)

    def json(self) -> dict[str, Any]:
        return {"name": self.name, "cases": len(self.cases), "sha256": self.sha256}


def suite_of(args: Sequence[str], invocation_dir: Path,
             loaded: Mapping[Path, Sequence[Case]] | None = None) -> Suite:
    """The suite under pytest's path arguments (``file.yaml::case`` counts its whole file, and
    any part of the packaged cases counts all of them); ``loaded`` holds case files this
    process already collected."""
    loaded = loaded or {}
    roots = []
    for arg in args:
        path = Path(arg.split("::", 1)[0]).expanduser()
        path = path if path.is_absolute() else invocation_dir / path
        if path.is_dir() or path.suffix in (".yaml", ".yml"):
            roots.append(path.resolve())
    packaged = builtin_cases_dir().resolve()
    if roots and all(r == packaged or packaged in r.parents for r in roots):
        # A packaged file or case (a rerun-alone line) is a selection of the benchmark, as
        # -k is: the report stays the whole suite's, its other items kept.
        roots = [packaged]
    name = PACKAGED if roots == [packaged] else " ".join(_shown(p, invocation_dir)
                                                          for p in roots)
    cases: dict[str, str] = {}
    unreadable = []
    for file in case_files(roots):
        found = loaded.get(file)
        if found is None:
            if not file.is_file():
                continue
            try:
                found = load_case_file(file)
            except (CaseFileError, OSError):
                unreadable.append(str(file))
                continue
        for case in found:
            cases[case.id] = case.spec_hash
    return Suite(name, cases, tuple(unreadable))


def _shown(path: Path, base: Path) -> str:
    try:
        return str(path.relative_to(base.resolve()))
    except ValueError:
        return str(path)


def kept_items(previous: Mapping[str, Any] | None, manifest: Mapping[str, Any],
               scope: Mapping[str, str], ran: Iterable[str]) -> list[dict[str, Any]]:
    """The items of the run directory's last report that are still current, for the cases of
    ``scope`` (case id -> text hash) that this session did not run (``ran``: item keys)."""
    if not isinstance(previous, Mapping) or not isinstance(previous.get("items"), list):
        return []
    before = previous.get("manifest")
    if not isinstance(before, Mapping) or any(before.get(k) != manifest.get(k)
                                              for k in SAME_RUN):
        return []
    done = set(ran)
    kept = []
    for item in previous["items"]:
        if not isinstance(item, dict) or item.get("key") in done:
            continue
        if scope.get(item.get("case_id", "")) != item.get("case_sha256"):
            continue  # no longer in the suite or this shard, or its text changed
        if item.get("status") != "error" and not all(
                isinstance(item.get(f), str) and Path(item[f]).is_file()
                for f in ("image", "judgment")):
            continue  # its sheet or judgment is gone: the next run of it redoes them
        # Nothing was drawn or judged for it in this session.
        kept.append({**item, "generated": False, "judged": False})
    return kept


def coverage_json(items: Sequence[Mapping[str, Any]], suite: Suite,
                  shard: tuple[int, int] | None, ran: int) -> dict[str, Any]:
    """The report's ``coverage``: the suite, this run's scope in it, and what it covers."""
    scope = suite.scope(shard)
    covered = {i["case_id"] for i in items if suite.cases.get(i["case_id"]) == i["case_sha256"]}
    coverage = {
        "suite": suite.json(),
        "shard": None if shard is None else f"{shard[0]}/{shard[1]}",
        "scope": len(scope),
        "cases": len(covered),
        "missing": len(scope - covered),
        "outside": len(items) - len(covered),
        "complete": covered == set(suite.cases) and len(items) == len(covered)
        and not suite.unreadable,
        "ran": ran,
        "kept": len(items) - ran,
    }
    # The protocol's sheet is square: a backend's other shape is scored, and counted here.
    non_square = sum(1 for i in items if i.get("square") is False)
    if non_square:
        coverage["non_square"] = non_square
    return coverage


# ------------------------------------------------------------------ readers


def coverage_of(report: Mapping[str, Any]) -> Mapping[str, Any] | None:
    coverage = report.get("coverage")
    return coverage if isinstance(coverage, Mapping) else None


def is_complete(report: Mapping[str, Any]) -> bool:
    """Whether the report covers every case of its suite (a report that does not say is not
    taken to)."""
    coverage = coverage_of(report)
    return bool(coverage and coverage.get("complete"))


def coverage_text(report: Mapping[str, Any]) -> str:
    """``750/750``, or ``22/750 partial`` (``shard 2/4``), for tables."""
    coverage = coverage_of(report)
    if coverage is None:
        return f"{len(report.get('items', []))}/? unknown"
    text = f"{coverage['cases']}/{coverage['suite']['cases']}"
    if coverage["complete"]:
        return text
    return f"{text} shard {coverage['shard']}" if coverage["shard"] else f"{text} partial"


def coverage_note(name: str, report: Mapping[str, Any]) -> str | None:
    """One line saying that, and how, a report is partial; None for a complete one."""
    coverage = coverage_of(report)
    if coverage is None:
        return (f"{name}: this report does not say which cases it covers (written before "
                f"reports did): not comparable with a full run")
    if coverage["complete"]:
        return None
    suite = coverage["suite"]
    text = (f"{name}: PARTIAL: {coverage['cases']} of the {suite['cases']} cases of suite "
            f"{suite['name']}")
    if coverage["shard"]:
        text += f" (shard {coverage['shard']}: {coverage['scope']} cases"
        text += f", {coverage['missing']} of them missing)" if coverage["missing"] else ")"
    if coverage.get("outside"):
        text += f"; {coverage['outside']} items of cases outside the suite or changed since"
    if coverage["shard"]:
        count = str(coverage["shard"]).split("/")[1]
        return text + f"; 'imagetime merge' of all {count} shards gives the benchmark result"
    return text + "; not a benchmark result (docs/shards.md)"


def case_set_difference(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    """Why two reports cannot be compared as runs of the same cases, or None when they cover
    the same cases (by id)."""
    before = {i["case_id"] for i in baseline["items"]}
    now = {i["case_id"] for i in current["items"]}
    if before == now:
        return None
    only_before, only_now = sorted(before - now), sorted(now - before)
    parts = [f"the baseline covers {len(before)} cases ({coverage_text(baseline)}), this run "
             f"{len(now)} ({coverage_text(current)})"]
    if only_before:
        parts.append(f"{len(only_before)} of the baseline's are not in this run "
                     f"(e.g. {', '.join(only_before[:3])})")
    if only_now:
        parts.append(f"{len(only_now)} of this run's are not in the baseline "
                     f"(e.g. {', '.join(only_now[:3])})")
    return ("different cases: " + "; ".join(parts) + ": gate runs of the same cases (the "
            "full suite, or a baseline made from the same selection)")
