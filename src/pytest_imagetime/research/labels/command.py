"""``imagetime label export|import|judge``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .columns import FORMATS

if TYPE_CHECKING:
    from ...cases.model import Case

SHOWN_PROBLEMS = 20


def _cases(args: argparse.Namespace) -> dict[str, Case]:
    from ...cases.loading import builtin_cases_dir
    from .runs import load_cases

    return load_cases([Path(p) for p in args.cases] or [builtin_cases_dir()])


def _export(args: argparse.Namespace) -> int:
    from .export import export
    from .runs import RunError, load_items

    if args.sample < 1:
        print("imagetime label export: --sample must be at least 1", file=sys.stderr)
        return 2
    try:
        written = export(load_items(args.runs), _cases(args), Path(args.out), args.sample,
                         args.seed, annotator=args.annotator or "", max_px=args.max_px)
    except RunError as exc:
        print(f"imagetime label export: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from .columns import write_table
    from .importing import import_answers
    from .runs import RunError

    try:
        cases = _cases(args)
    except RunError as exc:
        print(f"imagetime label import: {exc}", file=sys.stderr)
        return 2
    result = import_answers([Path(p) for p in args.files], cases, annotator=args.annotator)
    if result.problems:
        for problem in result.problems[:SHOWN_PROBLEMS]:
            print(f"imagetime label import: {problem}", file=sys.stderr)
        if len(result.problems) > SHOWN_PROBLEMS:
            print(f"imagetime label import: ... and {len(result.problems) - SHOWN_PROBLEMS} "
                  "more problems", file=sys.stderr)
        return 2
    if not result.rows:
        print("imagetime label import: no answers in these files", file=sys.stderr)
        return 2
    write_table(Path(args.out), result.rows, result.predicates, args.format)
    annotators = sorted({r["annotator"] for r in result.rows})
    print(f"wrote {args.out}: {len(result.rows)} items from {', '.join(annotators)}"
          + (f"; skipped {result.skipped} unanswered" if result.skipped else ""))
    return 0


def _judge(args: argparse.Namespace) -> int:
    from .columns import write_table
    from .judge_table import judge_rows
    from .runs import RunError, load_items

    try:
        table = judge_rows(load_items(args.runs))
    except RunError as exc:
        print(f"imagetime label judge: {exc}", file=sys.stderr)
        return 2
    write_table(Path(args.out), table.rows, table.predicates, args.format)
    print(f"wrote {args.out}: {len(table.rows)} items")
    if table.without_verdicts:
        print(f"imagetime label judge: {table.without_verdicts} items have no per-predicate "
              "verdicts (their judge does not give them); those cells are empty",
              file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    label = sub.add_parser("label", help="Human labels: export a form, import the answers, "
                           "write the judge's answers in the same columns.")
    commands = label.add_subparsers(dest="label_command", required=True)

    export = commands.add_parser("export", help="A stratified sample of stored sheets as a "
                                 "self-contained HTML form (form.html) and items.csv.")
    export.add_argument("runs", nargs="+", help="Run directories, report.json files or output "
                        "directories.")
    export.add_argument("--sample", type=int, required=True, metavar="N",
                        help="How many items (stratified by domain and model).")
    export.add_argument("--seed", type=int, default=0, help="Seed of the draw (default 0).")
    export.add_argument("-o", "--out", required=True, metavar="DIR", help="Folder to write.")
    export.add_argument("--annotator", help="Annotator name filled into the form.")
    export.add_argument("--max-px", type=int, default=1024,
                        help="Scale larger sheets down to this many pixels (default 1024).")

    imp = commands.add_parser("import", help="Filled answer CSVs into one checked table.")
    imp.add_argument("files", nargs="+", help="CSV files downloaded from the form, or "
                     "items.csv filled in by hand.")
    imp.add_argument("-o", "--out", required=True, metavar="TABLE.csv", help="Table to write.")
    imp.add_argument("--annotator", help="Keep only this annotator's answers.")
    imp.set_defaults(func=_import, writes=("out", "file"))

    judge = commands.add_parser("judge", help="The judge's answers of stored runs in the "
                                "columns of the form.")
    judge.add_argument("runs", nargs="+", help="Run directories, report.json files or output "
                       "directories.")
    judge.add_argument("-o", "--out", required=True, metavar="TABLE.csv", help="Table to write.")
    judge.set_defaults(func=_judge, writes=("out", "file"))

    for parser in (export, imp):
        parser.add_argument("--cases", action="append", default=[], metavar="PATH",
                            help="Case files or directories (default: the packaged cases); "
                            "repeatable.")
    for parser in (imp, judge):
        parser.add_argument("--format", choices=FORMATS, default="wide",
                            help="wide: one row per item; long: one row per predicate answer "
                            "(default wide).")
    export.set_defaults(func=_export, writes=("out", "folder"))
