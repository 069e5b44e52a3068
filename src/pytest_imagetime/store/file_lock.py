"""An exclusive lock between processes on one file, on Linux, macOS and Windows.

The operating system holds the lock and drops it when its holder dies, so a killed run never
leaves a lock behind. POSIX systems lock the whole file with ``flock``; Windows locks its first
byte with ``msvcrt.locking``. Each module is imported only when a lock is taken, so the
package imports on every platform.
"""

from __future__ import annotations

import contextlib
import errno
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Protocol


class Msvcrt(Protocol):
    """The part of Windows' ``msvcrt`` module that locks a file."""

    LK_LOCK: int
    LK_UNLCK: int

    def locking(self, fd: int, mode: int, nbytes: int, /) -> None: ...


# msvcrt.locking(LK_LOCK) gives up after ten one-second tries with one of these; a lock held
# longer (a reference drawn on a slow GPU) is waited for by trying again.
WINDOWS_BUSY = frozenset({errno.EDEADLK, errno.EACCES})


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold ``path``'s lock (made with its folder when missing) for the ``with`` block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        if sys.platform == "win32":
            import msvcrt

            with windows_lock(handle, msvcrt):
                yield
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextlib.contextmanager
def windows_lock(handle: IO[bytes], msvcrt: Msvcrt) -> Iterator[None]:
    """Lock the first byte of ``handle`` (msvcrt locks from the file's position)."""
    while True:
        handle.seek(0)
        try:
            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
        except OSError as exc:
            if exc.errno in WINDOWS_BUSY:
                continue
            raise
        break
    try:
        yield
    finally:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
