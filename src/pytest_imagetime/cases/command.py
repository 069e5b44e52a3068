"""``imagetime cases``: the packaged case files, listed or copied out for editing.

The packaged cases live inside the installed package, where edits are lost on the next
install; a team that wants its own variants copies them to a directory of its own and runs
``pytest DIR --imagetime-model=...`` on it."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .loading import builtin_cases_dir, case_files, load_case_file
from .model import CaseFileError


def _packaged(names: list[str]) -> list[Path]:
    """The packaged files by name (``kitchen`` or ``kitchen.yaml``), or all of them."""
    files = case_files([builtin_cases_dir()])
    if not names:
        return files
    by_name = {f.name: f for f in files} | {f.stem: f for f in files}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(f"no packaged case file {', '.join(map(repr, unknown))}; packaged: "
                         f"{', '.join(f.stem for f in files)}")
    return list(dict.fromkeys(by_name[n] for n in names))  # kitchen and kitchen.yaml: one file


def _count(path: Path) -> int:
    try:
        return len(load_case_file(path))
    except CaseFileError:
        return 0


def _list(args: argparse.Namespace) -> int:
    files = _packaged([])
    for path in files:
        print(f"{path.name:<28} {_count(path):>4} cases")
    print(f"{len(files)} files in {builtin_cases_dir()}")
    return 0


def _copy(args: argparse.Namespace) -> int:
    target = Path(args.dir)
    try:
        files = _packaged(args.files)
    except ValueError as exc:
        print(f"imagetime cases copy: {exc}", file=sys.stderr)
        return 2
    if target.exists() and not target.is_dir():
        print(f"imagetime cases copy: {target} is a file, not a directory", file=sys.stderr)
        return 2
    clashes = [target / f.name for f in files if (target / f.name).exists()]
    if clashes and not args.force:
        print(f"imagetime cases copy: {len(clashes)} file(s) exist already, e.g. "
              f"{clashes[0]}; --force replaces them", file=sys.stderr)
        return 2
    try:
        target.mkdir(parents=True, exist_ok=True)
        for path in files:
            shutil.copyfile(path, target / path.name)
    except OSError as exc:
        print(f"imagetime cases copy: cannot write {target}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    cases = sum(_count(target / f.name) for f in files)
    print(f"copied {len(files)} case file(s), {cases} cases, to {target}")
    print(f"run them: pytest {target} --imagetime-model=MODEL; check edits: imagetime lint "
          f"{target}")
    return 0


def cases_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cases = sub.add_parser("cases", help="The packaged case files: list them, or copy them "
                           "out for editing.")
    actions = cases.add_subparsers(dest="cases_command", required=True)
    listing = actions.add_parser("list", help="List the packaged case files.")
    listing.set_defaults(func=_list)
    copy = actions.add_parser("copy", help="Copy packaged case files into a directory.")
    copy.add_argument("dir", help="Directory to copy them into (made if missing).")
    copy.add_argument("files", nargs="*", help="Files to copy, e.g. kitchen or kitchen.yaml "
                      "(default: all).")
    copy.add_argument("--force", action="store_true", help="Replace files that exist.")
    copy.set_defaults(func=_copy)
