"""The runner of ``imagetime compare``: stored runs gated against a baseline."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .baseline_runs import AmbiguousBaseline, baseline_report
from .compare import GateSpecError, gate_lines, parse_thresholds
from .compare import compare as compare_runs


def _runs_in(path: Path) -> dict[str, Path]:
    """Report files of a report.json, a run directory, or an output directory of runs."""
    if path.is_file():
        return {"": path}
    if (path / "report.json").is_file():
        return {"": path / "report.json"}
    return {str(p.parent.relative_to(path)): p for p in sorted(path.glob("*/*/report.json"))}


def compare(args: argparse.Namespace) -> int:
    try:
        max_drop = parse_thresholds(args.max_drop or "", "--max-drop")
        floors = parse_thresholds(args.min or "", "--min")
    except GateSpecError as exc:
        print(f"imagetime compare: {exc}", file=sys.stderr)
        return 2
    baseline, current = _runs_in(Path(args.baseline)), _runs_in(Path(args.current))
    if not baseline or not current:
        empty = args.baseline if not baseline else args.current
        print(f"imagetime compare: no report.json in {empty}", file=sys.stderr)
        return 2
    results = []
    for run, path in current.items():
        now = json.loads(path.read_text(encoding="utf-8"))
        base_path = baseline.get("")
        if base_path is None:
            # A new checkpoint under a new name: the directory's one run of its judge.
            try:
                run_dir = path.parent  # <model dir>/<judge dir>: the last two parts
                base_path = baseline_report(Path(args.baseline),
                                            Path(run_dir.parent.name, run_dir.name),
                                            now["manifest"]["setting"])
            except AmbiguousBaseline as exc:
                usage = "imagetime compare {report} " + str(args.current)
                print(f"imagetime compare: {run or path}: {exc}; {exc.how_to_pick(usage)}",
                      file=sys.stderr)
                return 2
        if base_path is None:
            print(f"imagetime compare: no baseline for {run}", file=sys.stderr)
            continue
        base = json.loads(base_path.read_text(encoding="utf-8"))
        label = run or now["manifest"]["model"]["spec"]
        results.append(compare_runs(base, now, max_drop, floors, args.significant,
                               args.allow_judge_change, run=label))
    for line in gate_lines(results):
        print(line)
    return 1 if any(r.breached for r in results) else 0
