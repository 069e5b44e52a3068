"""Which weights a spec names, resolved directly: local digests and Hub commits
(models/weights_revision.py)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_imagetime.models.weights_revision import (
    COMMIT,
    UNRESOLVED,
    hub_revision,
    local_revision,
)

COMMIT_A, COMMIT_B = "a" * 40, "b" * 40


def _weights(root: Path) -> Path:
    (root / "unet").mkdir(parents=True)
    (root / "unet" / "model.safetensors").write_bytes(b"12345")
    (root / "model_index.json").write_text("{}")
    return root


def test_a_local_digest_is_stable_and_prefixed(tmp_path: Path) -> None:
    folder = _weights(tmp_path / "w")
    first = local_revision(folder)
    assert first.startswith("local-") and len(first) == len("local-") + 16
    assert local_revision(folder) == first


def test_a_replaced_or_added_file_changes_the_digest(tmp_path: Path) -> None:
    folder = _weights(tmp_path / "w")
    before = local_revision(folder)
    (folder / "unet" / "model.safetensors").write_bytes(b"123456")
    resized = local_revision(folder)
    assert resized != before
    (folder / "extra.bin").write_bytes(b"")
    assert local_revision(folder) != resized


def test_a_touched_file_changes_the_digest(tmp_path: Path) -> None:
    folder = _weights(tmp_path / "w")
    before = local_revision(folder)
    os.utime(folder / "model_index.json", ns=(1, 1))
    assert local_revision(folder) != before


def test_hidden_files_and_folders_leave_the_digest_alone(tmp_path: Path) -> None:
    folder = _weights(tmp_path / "w")
    before = local_revision(folder)
    (folder / ".cache" / "huggingface").mkdir(parents=True)
    (folder / ".cache" / "huggingface" / "x.lock").write_text("x")
    (folder / ".gitattributes").write_text("x")
    assert local_revision(folder) == before


def test_the_same_files_elsewhere_give_the_same_digest(tmp_path: Path) -> None:
    a, b = _weights(tmp_path / "a"), _weights(tmp_path / "b")
    for name in ("unet/model.safetensors", "model_index.json"):
        os.utime(a / name, ns=(5, 5))
        os.utime(b / name, ns=(5, 5))
    assert local_revision(a) == local_revision(b)


def test_a_single_file_is_named_by_its_own_name(tmp_path: Path) -> None:
    file = tmp_path / "model.safetensors"
    file.write_bytes(b"x")
    digest = local_revision(file)
    assert digest.startswith("local-")
    moved = tmp_path / "renamed.safetensors"
    file.rename(moved)
    assert local_revision(moved) != digest


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return tmp_path / "hub"


def _cache(hub: Path, repo: str, refs: dict[str, str], snapshots: tuple[str, ...] = ()) -> None:
    folder = hub / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    for name, commit in refs.items():
        (folder / "refs" / name).write_text(commit + "\n")
    for snapshot in snapshots:
        (folder / "snapshots" / snapshot).mkdir(parents=True)


def _no_hub(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from huggingface_hub import HfApi

    asked: list[str] = []

    def model_info(self: Any, repo: str, **_: Any) -> Any:
        asked.append(repo)
        raise AssertionError("the Hub was asked")

    monkeypatch.setattr(HfApi, "model_info", model_info)
    return asked


def test_a_full_commit_is_its_own_revision(hub_cache: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _no_hub(monkeypatch)
    assert hub_revision("org/repo", COMMIT_A, online=True) == COMMIT_A
    assert COMMIT.fullmatch(COMMIT_A) and not COMMIT.fullmatch("A" * 40)


def test_the_cache_ref_decides_before_the_hub(hub_cache: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _no_hub(monkeypatch)
    _cache(hub_cache, "org/repo", {"main": COMMIT_A, "v2": COMMIT_B}, snapshots=("abc1234",))
    assert hub_revision("org/repo", None, online=True) == COMMIT_A
    assert hub_revision("org/repo", "v2", online=True) == COMMIT_B
    assert hub_revision("org/repo", "abc1234", online=True) == "abc1234"
    assert asked == []


def test_an_uncached_repository_is_unresolved_offline(hub_cache: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _no_hub(monkeypatch)
    assert hub_revision("org/absent", None, online=False) == UNRESOLVED
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert hub_revision("org/absent", "v1", online=True) == UNRESOLVED
    assert asked == []


def test_an_uncached_repository_asks_the_hub_for_its_revision(
        hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import HfApi

    asked: list[tuple[str, Any]] = []

    def model_info(self: Any, repo: str, revision: Any = None, **_: Any) -> Any:
        asked.append((repo, revision))
        return SimpleNamespace(sha=COMMIT_B if revision else None)

    monkeypatch.setattr(HfApi, "model_info", model_info)
    assert hub_revision("org/new", "dev", online=True) == COMMIT_B
    assert hub_revision("org/new", None, online=True) == UNRESOLVED  # the Hub named no commit
    assert asked == [("org/new", "dev"), ("org/new", None)]


def test_a_failing_hub_call_is_unresolved(hub_cache: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import HfApi

    def model_info(self: Any, repo: str, **_: Any) -> Any:
        raise ConnectionError("no network")

    monkeypatch.setattr(HfApi, "model_info", model_info)
    assert hub_revision("org/gated", None, online=True) == UNRESOLVED
