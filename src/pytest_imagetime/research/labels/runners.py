"""The runners of ``imagetime label export|import|judge``: refusals with exit 2, what is written."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...cases.loading import builtin_cases_dir
from ...cases.model import Case
from .columns import write_table
from .export import export
from .importing import import_answers
from .judge_table import judge_rows
from .runs import RunError, load_cases, load_items

SHOWN_PROBLEMS = 20


def _cases(args: argparse.Namespace) -> dict[str, Case]:
    return load_cases([Path(p) for p in args.cases] or [builtin_cases_dir()])


def export_form(args: argparse.Namespace) -> int:
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


def import_labels(args: argparse.Namespace) -> int:
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


def write_judge_table(args: argparse.Namespace) -> int:
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
