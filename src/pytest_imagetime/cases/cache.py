"""Checked case files, kept so that collecting the cases does not parse and check the same
YAML again.

Parsing and checking the packaged case files is a cost paid in every process that collects
them: each run, each xdist worker, each resume, each lint. What a valid text gave (the values
of each case as the case holds them, with its line; the problems the checks found; each
case's spec hash) is kept under the SHA-256 of the text and of the code that parses and
checks it, so an edited file, or a new version of the checks, is parsed and checked afresh:
nothing can go stale.
Files the schema rejects are not kept (they are being fixed, and their messages come from
jsonschema).

Where: ``$IMAGETIME_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-imagetime``, else
``~/.cache/pytest-imagetime``; ``IMAGETIME_CACHE_DIR=off`` turns the cache off. Entries are
``marshal`` data of plain values, as Python's own bytecode cache, so the directory must be
one only its user writes (as ``__pycache__``). The cache only saves time: an entry that
cannot be read is parsed again and rewritten, a directory that cannot be written is not used.
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import os
import sys
from importlib.util import find_spec
from pathlib import Path
from typing import Any, cast

FORMAT = 3  # of what is kept; old entries are never looked up again, and are pruned
MAX_ENTRIES = 256  # a few versions of every case file a machine has
SUFFIX = ".parsed"
OFF = ("", "off", "none")
# What decides the data, lines and problems of a text, besides PyYAML.
CODE_FOLDERS = ("cases", "rubric")  # every module that shapes a checked case
CODE_FILES = ("schemas/cases.schema.json",)

Found = tuple[str, int | None, str | None, str | None, str]  # a problem, less its path
# The fields of each case (cases.CaseFields, plain values), problems, and each case's spec
# hash (every run hashes every case's spec as JSON).
Kept = tuple[list[Any], list[Found], list[str]]


def cache_dir() -> Path | None:
    """The directory of parsed case files; None when the cache is off."""
    configured = os.environ.get("IMAGETIME_CACHE_DIR")
    if configured is not None:
        if configured.strip().lower() in OFF:
            return None
        return Path(configured).expanduser() / "cases"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "pytest-imagetime" / "cases"


@functools.cache
def _code_digest() -> str | None:
    """None when the code cannot be read (a zipped install, say): then nothing is kept."""
    here = Path(__file__).parents[1]
    parser = _installed_yaml()
    if parser is None:
        return None
    digest = hashlib.sha256(
        f"{FORMAT}:{parser}:{marshal.version}:{sys.version_info[:2]}".encode())
    try:
        sources = [p for folder in CODE_FOLDERS for p in sorted((here / folder).glob("*.py"))]
        for path in [*sources, *(here / name for name in CODE_FILES)]:
            digest.update(path.read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


def _installed_yaml() -> str | None:
    """Which PyYAML parses, without importing it (a kept file never needs it): the path,
    size and time of its module, which any install, upgrade or downgrade changes."""
    try:
        spec = find_spec("yaml")
        origin = None if spec is None else spec.origin
        if origin is None:
            return None
        found = os.stat(origin)
    except (ImportError, OSError, ValueError):
        return None
    return f"{origin}:{found.st_size}:{found.st_mtime_ns}"


def _entry(folder: Path, text: str) -> Path:
    digest = hashlib.sha256(f"{_code_digest()}\n{text}".encode()).hexdigest()
    return folder / f"{digest[:40]}{SUFFIX}"


def _folder() -> Path | None:
    return cache_dir() if _code_digest() is not None else None


def load(text: str) -> Kept | None:
    """What was kept for ``text``; None when nothing was (or it cannot be read)."""
    folder = _folder()
    if folder is None:
        return None
    try:
        kept = marshal.loads(_entry(folder, text).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    if not (isinstance(kept, tuple) and len(kept) == 3
            and all(isinstance(part, list) for part in kept)):
        return None
    return cast(Kept, kept)


def store(text: str, kept: Kept) -> None:
    """Keep what ``text`` gave; does nothing when it cannot (no directory, a value marshal
    does not take, such as a YAML timestamp)."""
    folder = _folder()
    if folder is None:
        return
    try:
        payload = marshal.dumps(kept)
    except ValueError:
        return
    from ..store.atomic import atomic_write_bytes  # here: only a miss writes

    try:
        atomic_write_bytes(_entry(folder, text), payload)
        _prune(folder)
    except OSError:
        return


def _prune(folder: Path) -> None:
    """Drop the oldest entries beyond MAX_ENTRIES (only after a store, so rarely)."""
    entries = []
    for path in folder.glob(f"*{SUFFIX}"):
        try:
            entries.append((path.stat().st_mtime_ns, path))
        except OSError:
            continue
    entries.sort()
    for _mtime, path in entries[:max(0, len(entries) - MAX_ENTRIES)]:
        path.unlink(missing_ok=True)
