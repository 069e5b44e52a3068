"""Loading the baselines' models: paths against hub ids, one-line load errors, devices,
batches, and the embedding inside a transformers output."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.research.baselines.loading import (
    INSTALL_HINT,
    LOAD_HINT,
    BaselineError,
    batches,
    features,
    from_pretrained,
    libraries,
    looks_like_path,
    resolve_device,
)


@pytest.mark.parametrize(("source", "path"), [
    ("openai/clip-vit-base-patch32", False), ("bert-base-uncased", False),
    ("/models/clip", True), ("./clip", True), ("~/clip", True), ("a/b/c", True),
    ("../up", True),
])
def test_a_folder_is_told_from_a_hub_id(source: str, path: bool) -> None:
    assert looks_like_path(source) is path


class _Loader:
    """A ``from_pretrained`` class that records its calls and fails as told."""

    calls: ClassVar[list[tuple[str, dict[str, Any]]]] = []
    cached = False
    error: Exception | None = None

    @classmethod
    def from_pretrained(cls, source: str, **kwargs: Any) -> str:
        cls.calls.append((source, kwargs))
        if kwargs.get("local_files_only") and not cls.cached:
            raise OSError("not in the cache")
        if cls.error is not None and not kwargs.get("local_files_only"):
            raise cls.error
        return f"loaded {source}"


@pytest.fixture
def loader() -> type[_Loader]:
    _Loader.calls, _Loader.cached, _Loader.error = [], False, None
    return _Loader


def test_a_cached_hub_model_loads_without_the_hub(loader: type[_Loader]) -> None:
    loader.cached = True
    assert from_pretrained(loader, "org/model", "CLIP model", revision="x") == "loaded org/model"
    assert loader.calls == [("org/model", {"local_files_only": True, "revision": "x"})]


def test_an_uncached_hub_model_asks_the_hub(loader: type[_Loader]) -> None:
    assert from_pretrained(loader, "org/model", "CLIP model") == "loaded org/model"
    assert [kwargs for _, kwargs in loader.calls] == [{"local_files_only": True}, {}]


def test_a_folder_is_loaded_as_a_folder(loader: type[_Loader], tmp_path: Path) -> None:
    assert from_pretrained(loader, str(tmp_path), "captioner") == f"loaded {tmp_path}"
    assert loader.calls == [(str(tmp_path), {})]


def test_a_missing_folder_is_named(loader: type[_Loader], tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"cannot load the captioner from .*/nope: "
                                            r"no such folder$"):
        from_pretrained(loader, str(tmp_path / "nope"), "captioner")
    assert loader.calls == []


def test_a_failing_load_is_one_line_with_the_hint(loader: type[_Loader]) -> None:
    loader.error = ValueError("Unrecognized model in org/model.\nShould have a model_type key")
    with pytest.raises(BaselineError) as raised:
        from_pretrained(loader, "org/model", "sentence embedder")
    assert str(raised.value) == ("cannot load the sentence embedder from org/model: "
                                 f"Unrecognized model in org/model. ({LOAD_HINT})")
    loader.error = RuntimeError("")
    with pytest.raises(BaselineError, match=r"from org/model: RuntimeError \("):
        from_pretrained(loader, "org/model", "sentence embedder")


def _torch(cuda: int = 0, mps: bool = False) -> Any:
    return SimpleNamespace(
        cuda=SimpleNamespace(is_available=lambda: cuda > 0, device_count=lambda: cuda),
        backends=SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps)))


@pytest.mark.parametrize(("cuda", "mps", "device", "chosen"), [
    (0, False, None, "cpu"), (2, False, None, "cuda"), (0, False, "cpu", "cpu"),
    (1, False, "cuda", "cuda"), (2, False, "cuda:1", "cuda:1"), (0, True, "mps", "mps"),
])
def test_devices_resolve(cuda: int, mps: bool, device: str | None, chosen: str) -> None:
    assert resolve_device(_torch(cuda, mps), device) == chosen


@pytest.mark.parametrize(("cuda", "mps", "device", "message"), [
    (0, False, "cuda", "device cuda: torch sees no CUDA GPU here; use --device cpu"),
    (0, False, "cuda:0", "device cuda:0: torch sees no CUDA GPU here; use --device cpu"),
    (0, False, "mps", "device mps: not available here; use --device cpu"),
    (1, False, "cuda:1", "device cuda:1: torch sees 1 GPUs"),
    (1, False, "cuda:x", "device 'cuda:x': use cpu, cuda, cuda:N or mps"),
    (1, False, "tpu", "device 'tpu': use cpu, cuda, cuda:N or mps"),
])
def test_bad_devices_say_why(cuda: int, mps: bool, device: str, message: str) -> None:
    with pytest.raises(BaselineError) as raised:
        resolve_device(_torch(cuda, mps), device)
    assert str(raised.value) == message


@given(st.lists(st.integers(), max_size=30), st.integers(1, 8))
def test_batches_cover_the_items_in_order(items: list[int], size: int) -> None:
    chunks = list(batches(items, size))
    assert [x for chunk in chunks for x in chunk] == items
    assert all(1 <= len(chunk) <= size for chunk in chunks)
    assert all(len(chunk) == size for chunk in chunks[:-1])


def test_a_batch_size_below_one_is_refused() -> None:
    with pytest.raises(BaselineError, match="batch size 0: must be at least 1"):
        list(batches([1], 0))


def test_features_unwrap_a_pooled_output() -> None:
    assert features(SimpleNamespace(pooler_output="pooled")) == "pooled"
    tensor = object()
    assert features(tensor) is tensor


def test_missing_libraries_name_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.import_module

    def without_transformers(name: str) -> Any:
        if name == "transformers":
            raise ImportError("no transformers", name="transformers")
        return real(name)

    monkeypatch.setattr(importlib, "import_module", without_transformers)
    with pytest.raises(BaselineError) as raised:
        libraries()
    assert str(raised.value) == ("the baselines need torch and transformers (transformers is "
                                 f"not installed): {INSTALL_HINT}")
