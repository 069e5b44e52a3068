"""Atomic writes: every file goes to a temporary beside it that is then renamed, so a killed
run never leaves a half file that a later run trusts; the temporaries killed writers left
behind, and reading JSON that may be missing or damaged.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from .keys import JSON


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with _replacing(path) as fd, os.fdopen(fd, "wb") as fh:
        fh.write(data)


def atomic_write_text(path: Path, chunks: Iterable[str]) -> None:
    """Write text made piece by piece (a report of every item) without holding all of it:
    buffered, to a temporary file renamed into place, in 64 KiB writes."""
    with _replacing(path) as fd, os.fdopen(fd, "w", encoding="utf-8", buffering=1 << 16) as fh:
        for chunk in chunks:
            fh.write(chunk)


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[int]:
    """An open file that replaces ``path`` once the block closes it; removed, with
    ``path`` untouched, when the block fails."""
    fd, tmp = _temporary_file(path)
    try:
        yield fd
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_TEMPORARY_NUMBERS = itertools.count()


def _temporary_file(path: Path) -> tuple[int, str]:
    """A new, open file beside ``path`` for its next content, and its name.

    The name is unique to this process (its host, pid and a counter that threads share), so
    an exclusive create nearly always succeeds at once, without mkstemp's random names and
    the chmod its 0600 needs. A name left by a killed process
    that had the same pid is skipped. The mode is what ``open`` gives (0666 less the umask).
    The host and pid let a later run tell a killed writer's file from a live one's
    (``remove_abandoned_temporaries``).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(path.parent, f".{path.name}.{_host()}.{os.getpid()}-"
                                        f"{next(_TEMPORARY_NUMBERS)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue


@functools.cache
def _host() -> str:
    from .run_lock import host_name  # at the first write: collecting never needs it

    return host_name()


# Lazy: the shortest name before it, so that a host is found where there is one.
_TEMPORARY = re.compile(r"^\..+?\.(?:(?P<host>[A-Za-z0-9_-]+)\.)?(?P<pid>\d+)-\d+\.tmp$")
# A write takes well under a second: a temporary file this old has no live writer, wherever
# it was written.
ABANDONED_AFTER_S = 3600.0


def remove_abandoned_temporaries(trees: Iterable[Path], folders: Iterable[Path] = ()) -> int:
    """Remove the temporary files that killed writers left in ``trees`` (and below) and in
    ``folders`` (not below): those of a process no longer running on this host, and any
    older than ``ABANDONED_AFTER_S``. A live writer's file (this session's, or a concurrent
    one's) is left alone. Returns how many were removed."""
    import time

    from .run_lock import process_alive

    here, now, removed = _host(), time.time(), 0
    alive: dict[int, bool] = {}
    shallow: Iterator[tuple[str, list[str], list[str]]] = (
        (str(f), [], os.listdir(f)) for f in folders if f.is_dir())
    for root, _, names in itertools.chain(*(os.walk(tree) for tree in trees), shallow):
        for name in names:
            found = _TEMPORARY.match(name)
            if found is None:
                continue
            path = os.path.join(root, name)
            pid = int(found["pid"])
            if found["host"] == here and pid not in alive:
                alive[pid] = process_alive(pid)
            dead = found["host"] == here and not alive[pid]
            try:
                if dead or now - os.stat(path).st_mtime > ABANDONED_AFTER_S:
                    os.unlink(path)
                    removed += 1
            except OSError:
                continue  # renamed into place or removed meanwhile
    return removed


def atomic_write_json(path: Path, data: JSON) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


def read_json(path: Path) -> JSON | None:
    """The parsed file, or None when it is missing or unreadable (then it is redone)."""
    try:
        # Bytes: json takes UTF-8 itself, without a text wrapper around the file.
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
