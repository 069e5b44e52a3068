"""The ``imagetime`` command: its parser, built from the rooms' light parser modules, and the one
place that imports the runner a subcommand names (``runner="module:function"``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import __version__
from .backends.prices import PriceError, parse_usd
from .cases.command import cases_parser
from .research.agreement.parsers import agree_parser, human_agree_parser, judges_agree_parser
from .research.baselines.command import add_parser as baseline_parser
from .research.labels.command import add_parser as label_parser
from .research.probe.commands import add_parser as probe_order_parser
from .research.tempviz_paper.command import add_parser as tempviz_parser
from .store.writable import file_problem, folder_problem


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
    lint.set_defaults(runner="pytest_imagetime.cases.runs:lint")
    summary = sub.add_parser("summary", help="Print the summary table of stored runs.")
    summary.add_argument("runs", nargs="+", help="Run directories or report.json files.")
    summary.set_defaults(runner="pytest_imagetime.report.runs:summary")
    merge = sub.add_parser("merge", help="Join the output directories of shards "
                           "(--imagetime-shard=K/N) into one run.")
    merge.add_argument("parts", nargs="+", help="Output directories of the shards.")
    merge.add_argument("-o", "--out", required=True, help="Output directory of the merged run.")
    merge.add_argument("--partial", action="store_true",
                       help="Merge parts that do not cover the suite (a shard missing, a -k "
                       "selection); the merged report says it is partial.")
    merge.set_defaults(runner="pytest_imagetime.report.runs:merge", writes=("out", "folder"))
    report = sub.add_parser("report", help="HTML report (leaderboard and case pages) and the "
                            "benchmark's figures from stored runs.")
    report.add_argument("runs", nargs="+", help="Run directories, report.json files or output "
                        "directories.")
    report.add_argument("-o", "--out", default="imagetime-report",
                        help="Folder to write (default: imagetime-report).")
    report.add_argument("--gpu-usd-per-hour", type=_gpu_usd_per_hour, metavar="USD",
                        help="Price a GPU hour: runs whose backend reports no generation cost "
                        "(open models drawn locally) go on the cost figure with their sheets' "
                        "drawing seconds at this rate.")
    report.set_defaults(runner="pytest_imagetime.report.runs:report", writes=("out", "folder"))
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
    comp.set_defaults(runner="pytest_imagetime.gate.runs:compare")
    agree_parser(sub)
    human_agree_parser(sub)
    cases_parser(sub)
    baseline_parser(sub)
    label_parser(sub)
    probe_order_parser(sub)
    judges_agree_parser(sub)
    tempviz_parser(sub)
    return parser


def _gpu_usd_per_hour(text: str) -> float:
    try:
        return parse_usd(text, zero=False)
    except PriceError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = f"imagetime {args.command}"
    problem = _output_problem(args)
    if problem is not None:
        print(f"{command}: {problem}", file=sys.stderr)
        return 2
    try:
        code: int = runner(args)(args)
    except BrokenPipeError:
        # The reader stopped early (`| head`): stop quietly, as other command-line tools do;
        # stdout goes to devnull so that the interpreter's last flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:  # a file that vanished or a disk that filled: its reason, once
        print(f"{command}: {exc}", file=sys.stderr)
        return 2
    return code


def runner(args: argparse.Namespace) -> Callable[[argparse.Namespace], int]:
    """The function that runs the parsed subcommand: its ``runner`` default, or its ``func``."""
    if not hasattr(args, "runner"):
        return args.func  # type: ignore[no-any-return]
    module, _, name = args.runner.partition(":")
    # Only the chosen subcommand's modules load, so that --help and the parsers stay light.
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _output_problem(args: argparse.Namespace) -> str | None:
    """Why the subcommand's output path cannot be written (its ``writes`` default names the
    argument and whether it is a folder or a file), checked before any work is done."""
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
