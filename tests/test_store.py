from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.store import (
    RunPaths,
    atomic_write_bytes,
    dir_slug,
    find_stored_sheet,
    input_key,
    load_stored_image,
    read_json,
    store_image,
)


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
