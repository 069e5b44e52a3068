from __future__ import annotations

import os
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.store import (
    RunPaths,
    atomic_write_bytes,
    dir_slug,
    input_key,
    load_stored_image,
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
