"""The cases the order probe and ``imagetime judges-agree`` read, for domains and actions."""

from __future__ import annotations

import sys
from pathlib import Path

from ..cases.loading import builtin_cases_dir, case_files, load_case_file
from ..cases.model import Case, CaseFileError


def load_cases(paths: list[str] | None) -> dict[str, Case]:
    """Cases by id from files or folders (default: the packaged cases); CaseFileError when a
    file has errors."""
    roots = [Path(p) for p in paths] if paths else [builtin_cases_dir()]
    missing = [str(p) for p in roots if not p.exists()]
    if missing:
        raise FileNotFoundError(f"no such file or directory: {', '.join(missing)}")
    return {c.id: c for f in case_files(roots) for c in load_case_file(f)}


def command_cases(command: str, paths: list[str] | None) -> dict[str, Case] | None:
    """The cases of ``load_cases``, or None once ``imagetime <command>: <why>`` is printed."""
    try:
        return load_cases(paths)
    except (FileNotFoundError, CaseFileError) as exc:
        print(f"imagetime {command}: {exc}", file=sys.stderr)
        return None
