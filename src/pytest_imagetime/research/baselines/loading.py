"""Loading the baselines' models: torch and transformers on demand, clear errors, devices.

torch and transformers are optional dependencies, so nothing here imports them at module
level: ``imagetime --help`` and the rest of the plugin work without them.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

INSTALL_HINT = "pip install 'pytest-imagetime[diffusers]'"
LOAD_HINT = ("a model id needs the Hugging Face hub or its files in the local cache "
             "(HF_HUB_OFFLINE=1 skips the hub); without network, pass a local folder written "
             "by save_pretrained")

T = TypeVar("T")


class BaselineError(Exception):
    """A baseline that cannot run; the message names the model, path or option at fault."""


def libraries() -> tuple[Any, Any]:
    """torch and transformers, or a BaselineError that says how to install them."""
    try:
        torch = importlib.import_module("torch")
        transformers = importlib.import_module("transformers")
    except ImportError as exc:
        missing = exc.name or "torch or transformers"
        raise BaselineError(f"the baselines need torch and transformers ({missing} is not "
                            f"installed): {INSTALL_HINT}") from None
    return torch, transformers


def looks_like_path(source: str) -> bool:
    """A folder rather than a hub id ('name' or 'owner/name')."""
    return (os.path.isabs(source) or source.startswith((".", "~")) or source.count("/") > 1
            or (os.sep != "/" and os.sep in source))


def from_pretrained(cls: Any, source: str, what: str, **kwargs: Any) -> Any:
    """``cls.from_pretrained(source)``, every failure turned into one BaselineError line."""
    given, folder = source, Path(source).expanduser()
    if looks_like_path(source) and not folder.is_dir():
        raise BaselineError(f"cannot load the {what} from {source}: no such folder")
    if folder.is_dir():
        source = str(folder)
    else:  # a hub id already in the cache loads without asking the hub
        with contextlib.suppress(Exception):
            return cls.from_pretrained(source, local_files_only=True, **kwargs)
    try:
        return cls.from_pretrained(source, **kwargs)
    except Exception as exc:  # hub, file and config errors have no common base class
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise BaselineError(f"cannot load the {what} from {given}: {reason} ({LOAD_HINT})"
                            ) from None


def resolve_device(torch: Any, device: str | None) -> str:
    """``device`` as given, checked; None picks the first GPU when there is one."""
    if device is None:
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise BaselineError(f"device {device}: torch sees no CUDA GPU here; use --device cpu")
    if device == "mps" and not torch.backends.mps.is_available():
        raise BaselineError("device mps: not available here; use --device cpu")
    if device in ("cpu", "mps", "cuda"):
        return device
    prefix, _, index = device.partition(":")
    if prefix != "cuda" or not index.isdigit():
        raise BaselineError(f"device {device!r}: use cpu, cuda, cuda:N or mps")
    if int(index) >= torch.cuda.device_count():
        raise BaselineError(f"device {device}: torch sees {torch.cuda.device_count()} GPUs")
    return device


def batches(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    if size < 1:
        raise BaselineError(f"batch size {size}: must be at least 1")
    for start in range(0, len(items), size):
        yield items[start:start + size]


def features(output: Any) -> Any:
    """The embedding tensor of ``get_*_features``: transformers 5 wraps it in an output
    object (projected ``pooler_output``), earlier versions return the tensor itself."""
    pooled = getattr(output, "pooler_output", None)
    return output if pooled is None else pooled
