"""The exclusive file lock: one holder at a time among threads and processes, released on
error, its folder made; the Windows path waits out a busy lock and unlocks the first byte.
(The lock across pytest processes: tests/project/test_install.py.)"""

from __future__ import annotations

import errno
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_imagetime.store.file_lock import WINDOWS_BUSY, exclusive, windows_lock


def test_the_lock_file_and_its_folder_are_made(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "run.lock"
    with exclusive(path):
        assert path.is_file()
    with exclusive(path):  # taken again once released
        pass


def test_the_lock_is_released_when_the_block_raises(tmp_path: Path) -> None:
    path = tmp_path / "run.lock"
    with pytest.raises(RuntimeError), exclusive(path):
        raise RuntimeError("boom")
    taken = threading.Event()

    def take() -> None:
        with exclusive(path):
            taken.set()

    worker = threading.Thread(target=take)
    worker.start()
    worker.join(10)
    assert taken.is_set()


@settings(max_examples=5, deadline=None)
@given(st.integers(2, 6), st.integers(1, 4))
def test_one_holder_at_a_time(threads: int, rounds: int) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.lock"
        inside: list[int] = []
        overlaps: list[int] = []
        guard = threading.Lock()

        def work() -> None:
            for _ in range(rounds):
                with exclusive(path):
                    with guard:
                        inside.append(1)
                        if len(inside) > 1:
                            overlaps.append(len(inside))
                    time.sleep(0.001)
                    with guard:
                        inside.pop()

        workers = [threading.Thread(target=work) for _ in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(30)
        assert overlaps == []
        assert inside == []


class _Msvcrt:
    LK_LOCK = 1
    LK_UNLCK = 0

    def __init__(self, busy: int, error: int | None = None) -> None:
        self.busy = busy
        self.error = error
        self.calls: list[tuple[int, int]] = []

    def locking(self, fd: int, mode: int, nbytes: int, /) -> None:
        self.calls.append((mode, nbytes))
        if mode == self.LK_LOCK and self.error is not None:
            raise OSError(self.error, "failed")
        if mode == self.LK_LOCK and self.busy:
            self.busy -= 1
            raise OSError(errno.EDEADLK, "busy")


@pytest.mark.parametrize("busy", [0, 1, 12])
def test_windows_waits_for_a_busy_lock_then_unlocks_one_byte(tmp_path: Path, busy: int) -> None:
    fake = _Msvcrt(busy)
    with (tmp_path / "x.lock").open("a+b") as handle:
        handle.write(b"data")
        with windows_lock(handle, fake):
            assert handle.tell() == 0  # locked from the first byte
            handle.seek(3)
        assert handle.tell() == 0  # unlocked from the first byte too
    assert fake.calls == [(fake.LK_LOCK, 1)] * (busy + 1) + [(fake.LK_UNLCK, 1)]


def test_windows_raises_what_is_not_a_busy_lock(tmp_path: Path) -> None:
    assert errno.EBADF not in WINDOWS_BUSY
    fake = _Msvcrt(0, errno.EBADF)
    with (tmp_path / "x.lock").open("a+b") as handle, \
            pytest.raises(OSError, match="failed"), windows_lock(handle, fake):
        pass
    assert fake.calls == [(fake.LK_LOCK, 1)]
