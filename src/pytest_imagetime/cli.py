"""The ``imagetime`` command: its parser and the subcommands that lint cases, summarise, merge,
report and gate stored runs; the case, label, baseline, agreement and probe subcommands are
registered from the rooms that own them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from . import __version__
from .cases.command import cases_parser
from .cases.lint import lint_paths
from .cases.loading import builtin_cases_dir
from .report.summary import summary_lines
from .research.agreement.command import add_parser as agree_parser
from .research.agreement.human import add_parser as human_agree_parser
from .research.agreement.judges import add_parser as judges_agree_parser
from .research.baselines.command import add_parser as baseline_parser
from .research.labels.command import add_parser as label_parser
from .research.probe.commands import add_parser as probe_order_parser
from .research.tempviz_paper.command import add_parser as tempviz_parser


def _lint(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.paths] or [builtin_cases_dir()]
    missing = [p for p in paths if not p.exists()]
    if missing:
        print(f"imagetime lint: no such file or directory: {', '.join(map(str, missing))}",
              file=sys.stderr)
        return 2
    result = lint_paths(paths, custom=args.custom, complete=args.complete)
    if result.files == 0:
        print(f"imagetime lint: no case files under {', '.join(map(str, paths))} (a case file "
              "is a .yaml/.yml file starting with 'imagetime: cases/1')", file=sys.stderr)
        return 2
    for problem in result.problems:
        print(problem)
    failing = len(result.errors) + (len(result.warnings) if args.strict else 0)
    domains = len({c.domain for c in result.cases})
    print(f"{len(result.cases)} cases in {result.files} files ({domains} domains): "
          f"{len(result.errors)} errors, {len(result.warnings)} warnings")
    return 1 if failing else 0


def _summary(args: argparse.Namespace) -> int:
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


def _merge(args: argparse.Namespace) -> int:
    from .report.merge import MergeError, merge

    parts = [Path(p) for p in args.parts]
    missing = [str(p) for p in parts if not p.is_dir()]
    if missing:
        print(f"imagetime merge: not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        written = merge(parts, Path(args.out), partial=args.partial)
    except MergeError as exc:
        print(f"imagetime merge: {exc}", file=sys.stderr)
        return 1
    for path in written:
        print(f"report: {path}")
    return 0


def _runs_in(path: Path) -> dict[str, Path]:
    """Report files of a report.json, a run directory, or an output directory of runs."""
    if path.is_file():
        return {"": path}
    if (path / "report.json").is_file():
        return {"": path / "report.json"}
    return {str(p.parent.relative_to(path)): p for p in sorted(path.glob("*/*/report.json"))}


def _compare(args: argparse.Namespace) -> int:
    from .gate.compare import GateSpecError, compare, gate_lines, parse_thresholds

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
    from .gate.baseline_runs import AmbiguousBaseline, baseline_report

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
        results.append(compare(base, now, max_drop, floors, args.significant,
                               args.allow_judge_change, run=label))
    for line in gate_lines(results):
        print(line)
    return 1 if any(r.breached for r in results) else 0


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


def _report(args: argparse.Namespace) -> int:
    from .report.figures import INSTALL_HINT, has_generation_cost, has_judge_cost
    from .report.html import FIGURES_DIR, write_html

    runs = _run_dirs(args.runs)
    if not runs:
        print(f"imagetime report: no report.json under {', '.join(args.runs)}", file=sys.stderr)
        return 2
    out = Path(args.out)
    print(f"imagetime report: {len(runs)} run{'s' if len(runs) != 1 else ''}: making the "
          f"sheets' thumbnails, the pages and the figures", file=sys.stderr, flush=True)
    index = write_html(runs, out, progress=_Progress())
    print(f"html: {index}")
    figures = sorted((out / FIGURES_DIR).glob("*.*")) if (out / FIGURES_DIR).is_dir() else []
    if not figures:
        print(f"imagetime report: no figures (they need matplotlib: {INSTALL_HINT})",
              file=sys.stderr)
        return 0
    print(f"figures: {len(figures)} files in {out / FIGURES_DIR}, shown on {index.name}")
    reports = [json.loads((run / "report.json").read_text(encoding="utf-8")) for run in runs]
    if not has_generation_cost(reports):
        print("figures: no reported generation cost in these runs, so no "
              "generation-cost-vs-Overall figure")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="imagetime", description="ImageTime benchmark tools.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    lint = sub.add_parser("lint", help="Check case files against the schema and writing rules.")
    lint.add_argument("paths", nargs="*", help="Case files or directories (default: the "
                      "packaged cases).")
    lint.add_argument("--custom", action="store_true", help="A team's own concepts: skip the "
                      "inventory and variant checks.")
    lint.add_argument("--complete", action="store_true", help="Require both variants of every "
                      "inventory concept of the linted domains.")
    lint.add_argument("--strict", action="store_true", help="Warnings fail too.")
    lint.set_defaults(func=_lint)
    summary = sub.add_parser("summary", help="Print the summary table of stored runs.")
    summary.add_argument("runs", nargs="+", help="Run directories or report.json files.")
    summary.set_defaults(func=_summary)
    merge = sub.add_parser("merge", help="Join the output directories of shards "
                           "(--imagetime-shard=K/N) into one run.")
    merge.add_argument("parts", nargs="+", help="Output directories of the shards.")
    merge.add_argument("-o", "--out", required=True, help="Output directory of the merged run.")
    merge.add_argument("--partial", action="store_true",
                       help="Merge parts that do not cover the suite (a shard missing, a -k "
                       "selection); the merged report says it is partial.")
    merge.set_defaults(func=_merge, writes=("out", "folder"))
    report = sub.add_parser("report", help="HTML report (leaderboard and case pages) and the "
                            "benchmark's figures from stored runs.")
    report.add_argument("runs", nargs="+", help="Run directories, report.json files or output "
                        "directories.")
    report.add_argument("-o", "--out", default="imagetime-report",
                        help="Folder to write (default: imagetime-report).")
    report.set_defaults(func=_report, writes=("out", "folder"))
    comp = sub.add_parser("compare", help="Gate stored runs against a baseline (the same "
                          "output and exit status as the plugin's gate).")
    comp.add_argument("baseline", help="Baseline report.json, run directory or output directory.")
    comp.add_argument("current", help="Current report.json, run directory or output directory.")
    comp.add_argument("--max-drop", help="Tolerated drops, e.g. L5:0.3,overall:0.2.")
    comp.add_argument("--min", help="Absolute floors, e.g. L3:6.0.")
    comp.add_argument("--significant", action="store_true",
                      help="Breach a tolerance only when the drop is significant.")
    comp.add_argument("--allow-judge-change", action="store_true",
                      help="Compare runs scored by different judges or rubrics.")
    comp.set_defaults(func=_compare)
    agree_parser(sub)
    human_agree_parser(sub)
    cases_parser(sub)
    baseline_parser(sub)
    label_parser(sub)
    probe_order_parser(sub)
    judges_agree_parser(sub)
    tempviz_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = f"imagetime {args.command}"
    problem = _output_problem(args)
    if problem is not None:
        print(f"{command}: {problem}", file=sys.stderr)
        return 2
    try:
        code: int = args.func(args)
    except OSError as exc:  # a file that vanished or a disk that filled: its reason, once
        print(f"{command}: {exc}", file=sys.stderr)
        return 2
    return code


def _output_problem(args: argparse.Namespace) -> str | None:
    """Why the subcommand's output path cannot be written (its ``writes`` default names the
    argument and whether it is a folder or a file), checked before any work is done."""
    from .store.writable import file_problem, folder_problem

    writes = getattr(args, "writes", None)
    if writes is None:
        return None
    name, kind = writes
    value = getattr(args, name, None)
    if value is None:
        return None
    problem = (folder_problem if kind == "folder" else file_problem)(Path(value))
    if problem is None:
        return None
    return f"cannot write --{name.replace('_', '-')} {value}: {problem}"


if __name__ == "__main__":
    sys.exit(main())
