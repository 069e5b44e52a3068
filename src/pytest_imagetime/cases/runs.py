"""The runner of ``imagetime lint``: case files checked against the schema and writing rules."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .lint import lint_paths
from .loading import builtin_cases_dir


def lint(args: argparse.Namespace) -> int:
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
