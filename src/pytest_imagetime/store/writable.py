"""Whether an output path can be written, asked before any work is done.

The plugin asks at start-up and the ``imagetime`` command before a subcommand runs, so that a
folder that is a file, or a read-only place, is refused in seconds rather than after a night
of generation. Nothing is created: a run that only collects leaves no folder behind.
"""

from __future__ import annotations

import os
from pathlib import Path


class UnwritablePath(ValueError):
    """An output path that cannot be written; the message names it and says why."""


def folder_problem(path: Path) -> str | None:
    """Why ``path`` cannot be (made into) a writable folder, or None when it can."""
    if path.exists():
        if not path.is_dir():
            return f"{path} is a file, not a folder"
        if not _writable(path):
            return f"the folder {path} is not writable"
        return None
    return _creatable(path)


def file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written as a file (its folder made if needed), or None."""
    if path.is_dir():
        return f"{path} is a folder, not a file"
    if path.exists():
        return None if os.access(path, os.W_OK) else f"the file {path} is not writable"
    return _creatable(path)


def check_folder(path: Path, name: str) -> None:
    """Raise UnwritablePath naming the option ``name`` when ``path`` cannot be a folder."""
    problem = folder_problem(path)
    if problem is not None:
        raise UnwritablePath(f"{name}={path}: cannot write there: {problem}")


def check_file(path: Path, name: str) -> None:
    """Raise UnwritablePath naming the option ``name`` when ``path`` cannot be a file."""
    problem = file_problem(path)
    if problem is not None:
        raise UnwritablePath(f"{name}={path}: cannot write there: {problem}")


def _creatable(path: Path) -> str | None:
    """Why the missing ``path`` cannot be created, judged by its nearest existing parent."""
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"{parent} is a file, not a folder"
    if not _writable(parent):
        return f"the folder {parent} is not writable"
    return None


def _writable(folder: Path) -> bool:
    # Search permission too: a folder one can write to but not enter cannot hold files.
    return os.access(folder, os.W_OK | os.X_OK)


def check_run_outputs(out: Path, junit: Path | None, html: Path | None,
                      pytest_junit: str | None) -> None:
    """Raise UnwritablePath for the first of a run's output paths that cannot be written:
    its output folder, its JUnit file, its HTML folder and pytest's own ``--junitxml``."""
    check_folder(out, "--imagetime-out")
    if junit is not None:
        check_file(junit, "--imagetime-junit")
    if html is not None:
        check_folder(html, "--imagetime-html")
    if pytest_junit:
        check_file(Path(pytest_junit).absolute(), "--junitxml")
