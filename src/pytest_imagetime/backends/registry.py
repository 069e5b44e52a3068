"""Backends by name: built-ins plus third-party ones from an entry-point group.

A spec is ``NAME`` or ``NAME:ARGUMENT`` (``procedural:copied``, ``files:/data/sheets``).
Backends are imported only when used, so heavy libraries load only for the runs that need them.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any


class UnknownBackend(LookupError):
    pass


def spec_path(argument: str, base: Path | None) -> Path:
    """A path a spec names (``files:DIR``), ``~`` expanded; a relative one is relative to
    ``base`` (the ini file's folder for a spec from the ini file), else the working directory."""
    path = Path(argument).expanduser()
    return base / path if base is not None and not path.is_absolute() else path


@dataclass(frozen=True)
class Registry:
    kind: str  # "model" or "judge"
    group: str  # entry-point group
    builtins: Mapping[str, str]  # name -> "module:attribute"

    def available(self) -> dict[str, str]:
        found = dict(self.builtins)
        for ep in metadata.entry_points(group=self.group):
            found.setdefault(ep.name, ep.value)
        return found

    def factory(self, name: str) -> Callable[[str | None], Any]:
        # A built-in wins over an entry point of the same name (see available), so only other
        # names need the scan of every installed distribution's entry points.
        target = self.builtins.get(name) or self.available().get(name)
        if target is None:
            names = ", ".join(sorted(self.available()))
            raise UnknownBackend(f"unknown {self.kind} {name!r}; available: {names} "
                                 f"(third-party {self.kind}s register in the "
                                 f"{self.group!r} entry-point group)")
        module_name, _, attribute = target.partition(":")
        obj: Callable[[str | None], Any] = getattr(importlib.import_module(module_name),
                                                   attribute)
        return obj

    def create(self, spec: str, **context: Any) -> Any:
        """Build a backend; ``context`` (e.g. ``options=``) goes to factories that take it, and
        so does ``name=`` (the registered name), for one factory serving several names."""
        name, sep, argument = spec.partition(":")
        name = name.strip()
        factory = self.factory(name)
        context = {"name": name, **context}
        try:
            accepted = inspect.signature(factory).parameters
        except (TypeError, ValueError):
            accepted = {}  # type: ignore[assignment]
        takes_all = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
        extra = {k: v for k, v in context.items() if takes_all or k in accepted}
        return factory(argument if sep else None, **extra)


_DIFFUSERS = "pytest_imagetime.models.diffusers_backend:DiffusersModel"
# The benchmark's open models and their neighbours (docs/diffusers.md has the table);
# ``diffusers:REPO_OR_PATH`` takes any other pipeline.
DIFFUSERS_PRESETS = ("flux-dev", "flux-schnell", "flux2-dev", "sdxl", "sd3.5-large",
                     "qwen-image", "z-image-turbo", "hunyuanimage-2.1", "flux-kontext",
                     "qwen-image-edit")

MODELS = Registry("model", "imagetime.models", {
    "procedural": "pytest_imagetime.models.procedural:ProceduralModel",
    "files": "pytest_imagetime.models.files:FilesModel",
    "diffusers": _DIFFUSERS,
    **dict.fromkeys(DIFFUSERS_PRESETS, _DIFFUSERS),
    "openai-images": "pytest_imagetime.models.openai_images:OpenAIImagesModel",
})
JUDGES = Registry("judge", "imagetime.judges", {
    "vlm": "pytest_imagetime.judges.vlm:VlmJudge",
    "pixel": "pytest_imagetime.judges.pixel:PixelJudge",
    "replay": "pytest_imagetime.judges.replay:ReplayJudge",
    "vlm-chain": "pytest_imagetime.judges.chain:ChainJudge",
    "vlm-feedback": "pytest_imagetime.judges.feedback:FeedbackJudge",
    "vlm-instance": "pytest_imagetime.judges.instance:InstanceJudge",
})
