"""The runners of ``imagetime summary``, ``merge`` and ``report`` over stored runs."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from .figures import INSTALL_HINT, has_generation_cost, has_judge_cost, priced_by_gpu_time
from .html import FIGURES_DIR, write_html
from .merge import MergeError
from .merge import merge as merge_parts
from .summary import summary_lines


def summary(args: argparse.Namespace) -> int:
    reports = []
    for raw in args.runs:
        path = Path(raw)
        path = path / "report.json" if path.is_dir() else path
        try:
            reports.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            print(f"imagetime summary: cannot read {path}: {exc}", file=sys.stderr)
            return 2
    for line in summary_lines(reports):
        print(line)
    return 0


def merge(args: argparse.Namespace) -> int:
    parts = [Path(p) for p in args.parts]
    missing = [str(p) for p in parts if not p.is_dir()]
    if missing:
        print(f"imagetime merge: not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        written = merge_parts(parts, Path(args.out), partial=args.partial)
    except MergeError as exc:
        print(f"imagetime merge: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"report: {path}")
    return 0


def _run_dirs(paths: Sequence[str]) -> list[Path]:
    """Run directories from run directories, report files or output directories."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            found.append(path.parent)
        elif (path / "report.json").is_file():
            found.append(path)
        else:
            found.extend(p.parent for p in sorted(path.glob("*/*/report.json")))
    return found


def report(args: argparse.Namespace) -> int:

    runs = _run_dirs(args.runs)
    if not runs:
        print(f"imagetime report: no report.json under {', '.join(args.runs)}", file=sys.stderr)
        return 2
    out = Path(args.out)
    print(f"imagetime report: {len(runs)} run{'s' if len(runs) != 1 else ''}: making the "
          f"sheets' thumbnails, the pages and the figures", file=sys.stderr, flush=True)
    rate = args.gpu_usd_per_hour
    index = write_html(runs, out, progress=_Progress(), gpu_usd_per_hour=rate)
    print(f"html: {index}")
    figures = sorted((out / FIGURES_DIR).glob("*.*")) if (out / FIGURES_DIR).is_dir() else []
    if not figures:
        print(f"imagetime report: no figures (they need matplotlib: {INSTALL_HINT})",
              file=sys.stderr)
        return 0
    print(f"figures: {len(figures)} files in {out / FIGURES_DIR}, shown on {index.name}")
    reports = [json.loads((run / "report.json").read_text(encoding="utf-8")) for run in runs]
    if not has_generation_cost(reports, rate):
        print("figures: no reported generation cost in these runs, so no "
              "generation-cost-vs-Overall figure"
              + ("" if rate is not None else " (--gpu-usd-per-hour prices local runs' "
                 "drawing seconds)"))
    elif rate is not None:
        priced = [run.name for run, r in zip(runs, reports, strict=True)
                  if priced_by_gpu_time(r, rate)]
        if priced:
            print(f"figures: {len(priced)} run{'s' if len(priced) != 1 else ''} priced by "
                  f"GPU time at {rate:g} USD/h")
    if not has_judge_cost(reports):
        print("figures: no judge cost in these runs, so no judge-cost-vs-Overall figure")
    return 0


class _Progress:
    """Sheets done so far, on stderr: at most one line a second, and the last one."""

    def __init__(self, every_s: float = 1.0) -> None:
        self.every_s = every_s
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - self.last >= self.every_s:
            self.last = now
            print(f"imagetime report: sheets {done}/{total}", file=sys.stderr, flush=True)
