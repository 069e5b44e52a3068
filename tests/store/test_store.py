from __future__ import annotations

import itertools
import json
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.store import atomic as store_atomic
from pytest_imagetime.store.atomic import atomic_write_bytes, atomic_write_text, read_json
from pytest_imagetime.store.keys import input_key
from pytest_imagetime.store.paths import RunPaths, dir_slug
from pytest_imagetime.store.sheets import find_stored_sheet, load_stored_image, store_image


def test_input_key_is_order_independent_and_sensitive() -> None:
    assert input_key({"a": 1, "b": [1, 2]}) == input_key({"b": [1, 2], "a": 1})
    assert input_key({"a": 1}) != input_key({"a": 2})


def test_atomic_write_leaves_no_partial_file(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "x" / "file.bin"
    atomic_write_bytes(target, b"old")

    def boom(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in target.parent.iterdir()] == ["file.bin"]


def test_a_failed_report_write_leaves_the_old_report(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    atomic_write_text(target, ["old"])

    def chunks() -> Iterator[str]:
        yield "half of the new"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write_text(target, chunks())
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600)])
def test_written_files_get_the_mode_open_gives(tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        atomic_write_bytes(tmp_path / "a.bin", b"a")
        atomic_write_text(tmp_path / "b.txt", ["b"])
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.bin").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "b.txt").stat().st_mode) == mode


def test_a_temporary_name_left_by_a_killed_process_is_skipped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_atomic, "_TEMPORARY_NUMBERS", itertools.count(7))
    left = tmp_path / f".file.bin.{os.getpid()}-7.tmp"
    left.write_bytes(b"half")
    atomic_write_bytes(tmp_path / "file.bin", b"whole")
    assert (tmp_path / "file.bin").read_bytes() == b"whole"
    assert left.read_bytes() == b"half"  # not ours to delete or overwrite


def test_threads_writing_one_file_never_mix_their_contents(tmp_path: Path) -> None:
    target = tmp_path / "shared.json"
    contents = [bytes([65 + t]) * 10_000 for t in range(8)]

    def write(data: bytes) -> None:
        for _ in range(25):
            atomic_write_bytes(target, data)

    threads = [threading.Thread(target=write, args=(data,)) for data in contents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert target.read_bytes() in contents
    assert [p.name for p in tmp_path.iterdir()] == ["shared.json"]


def test_run_paths_layout(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path, "files:/data/my sheets", "pixel", "scaffold")
    assert paths.model_dir == tmp_path / "files-data-my-sheets@scaffold"
    assert paths.run_dir == paths.model_dir / "pixel"
    assert paths.judgment("c-1") == paths.run_dir / "judgments" / "c-1.json"
    assert dir_slug("procedural:copied") == "procedural-copied"


def test_stored_image_needs_matching_key_and_intact_file(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path, "m", "j", "prompt-only")
    image = Image.new("RGB", (8, 8), (1, 2, 3))
    store_image(paths, "c", image, {"input_key": "k1"})
    stored = load_stored_image(paths, "c", "k1")
    assert stored is not None and stored[0].getpixel((0, 0)) == (1, 2, 3)
    assert load_stored_image(paths, "c", "k2") is None
    paths.image("c").write_bytes(paths.image("c").read_bytes()[:-10])
    assert load_stored_image(paths, "c", "k1") is None


def test_an_unchanged_sheet_is_not_read_again(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    paths = RunPaths(tmp_path, "m", "j", "prompt-only")
    store_image(paths, "c", Image.new("RGB", (8, 8), (1, 2, 3)), {"input_key": "k1"})
    record = read_json(paths.image_record("c"))
    assert isinstance(record, dict)
    assert record["image_file"]["bytes"] == paths.image("c").stat().st_size

    read_bytes = Path.read_bytes

    def unread(self: Path) -> bytes:
        if self.suffix == ".png":  # its record is read, the sheet must not be
            raise AssertionError(f"{self} was read")
        return read_bytes(self)

    with monkeypatch.context() as patched:
        patched.setattr(Path, "read_bytes", unread)
        found = find_stored_sheet(paths, "c", "k1")
    assert found is not None and found.data is None
    assert found.sha256 == record["image_sha256"]
    # Read later, it is checked against the recorded digest.
    assert found.read() == paths.image("c").read_bytes()
    original = paths.image("c").read_bytes()
    paths.image("c").write_bytes(original[:-4] + b"\0\0\0\0")
    with pytest.raises(ValueError, match="changed after it was checked"):
        found.read()


def test_a_touched_sheet_is_read_and_its_digest_decides(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path, "m", "j", "prompt-only")
    store_image(paths, "c", Image.new("RGB", (8, 8), (1, 2, 3)), {"input_key": "k1"})
    path = paths.image("c")
    written = path.stat()
    # The same bytes, written again later: read, and still the recorded sheet.
    path.write_bytes(path.read_bytes())
    os.utime(path, ns=(written.st_atime_ns, written.st_mtime_ns + 1_000_000_000))
    found = find_stored_sheet(paths, "c", "k1")
    assert found is not None and found.data == path.read_bytes()
    # Other bytes of the same size: rejected, and the sheet is made anew.
    path.write_bytes(path.read_bytes()[:-4] + b"\0\0\0\0")
    assert find_stored_sheet(paths, "c", "k1") is None


def test_a_record_without_file_facts_is_checked_by_its_digest(tmp_path: Path) -> None:
    # Records written before the file's size and time were kept.
    paths = RunPaths(tmp_path, "m", "j", "prompt-only")
    store_image(paths, "c", Image.new("RGB", (8, 8)), {"input_key": "k1"})
    record = read_json(paths.image_record("c"))
    assert isinstance(record, dict)
    del record["image_file"]
    atomic_write_bytes(paths.image_record("c"), json.dumps(record).encode())
    found = find_stored_sheet(paths, "c", "k1")
    assert found is not None and found.data == paths.image("c").read_bytes()
    paths.image("c").unlink()
    assert find_stored_sheet(paths, "c", "k1") is None
