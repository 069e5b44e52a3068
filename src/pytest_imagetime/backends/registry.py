"""Backends by name: built-ins plus third-party ones from an entry-point group.

A spec is ``NAME`` or ``NAME:ARGUMENT`` (``procedural:copied``, ``files:/data/sheets``), or
``python:MODULE:ATTRIBUTE[:ARGUMENT]`` for a factory in any importable module; a session adds
the names its conftest.py files register. Backends are imported only when used, so heavy
libraries load only for the runs that need them.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any


class UnknownBackend(LookupError):
    pass


PYTHON_FORM = "python:MODULE:ATTRIBUTE[:ARGUMENT]"


def python_factory(target: str) -> tuple[Callable[..., Any], str | None]:
    """The factory and argument of a ``python:MODULE:ATTRIBUTE[:ARGUMENT]`` spec (``target``
    is what follows ``python:``); a bad one raises ValueError saying what failed."""
    module_name, _, rest = target.partition(":")
    attribute, sep, argument = rest.partition(":")
    module_name, attribute = module_name.strip(), attribute.strip()
    accepted = (f"the accepted form is {PYTHON_FORM}, MODULE importable from the rootdir or "
                "sys.path and ATTRIBUTE a class or factory in it")
    if not module_name or not attribute:
        raise ValueError(f"no {'module' if not module_name else 'attribute'} given; {accepted}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ValueError(f"module {module_name!r} not found ({exc}); {accepted}") from None
    except Exception as exc:  # the module itself fails: say how, not a traceback
        raise ValueError(f"module {module_name!r} failed to import: "
                         f"{type(exc).__name__}: {exc}; {accepted}") from None
    obj = getattr(module, attribute, None)
    if obj is None:
        raise ValueError(f"module {module_name!r} has no attribute {attribute!r}; {accepted}")
    if not callable(obj):
        raise ValueError(f"{module_name}:{attribute} is not callable "
                         f"({type(obj).__name__}); {accepted}")
    return obj, argument if sep else None


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
    # Names a session's conftest.py files and plugins register (pytest_imagetime_register_models)
    added: Mapping[str, Callable[..., Any]] = field(default_factory=dict)

    def with_added(self, factories: Mapping[str, Callable[..., Any]]) -> Registry:
        """This registry plus ``factories`` by name (a built-in name is refused)."""
        taken = sorted(set(factories) & {*self.builtins, "python"})
        if taken:
            raise ValueError(f"{', '.join(taken)}: a built-in {self.kind} has this name; "
                             "register under another one")
        return replace(self, added={**self.added, **factories})

    def available(self) -> dict[str, str]:
        found = dict(self.builtins)
        for ep in metadata.entry_points(group=self.group):
            found.setdefault(ep.name, ep.value)
        return found

    def factory(self, name: str) -> Callable[[str | None], Any]:
        # A built-in wins over an entry point of the same name (see available), so only other
        # names need the scan of every installed distribution's entry points.
        if name in self.added:
            return self.added[name]
        target = self.builtins.get(name) or self.available().get(name)
        if target is None:
            names = ", ".join(sorted({*self.available(), *self.added}))
            raise UnknownBackend(f"unknown {self.kind} {name!r}; available: {names} "
                                 f"(third-party {self.kind}s register in the "
                                 f"{self.group!r} entry-point group, or are named as "
                                 f"{PYTHON_FORM})")
        module_name, _, attribute = target.partition(":")
        obj: Callable[[str | None], Any] = getattr(importlib.import_module(module_name),
                                                   attribute)
        return obj

    def create(self, spec: str, **context: Any) -> Any:
        """Build a backend; ``context`` (e.g. ``options=``) goes to factories that take it, and
        so does ``name=`` (the registered name), for one factory serving several names."""
        name, sep, argument = spec.partition(":")
        name = name.strip()
        if name == "python":
            factory, given = python_factory(argument)
            sep, argument = ("", "") if given is None else (":", given)
        else:
            factory = self.factory(name)
        context = {"name": name, **context}
        try:
            accepted = inspect.signature(factory).parameters
        except (TypeError, ValueError):
            accepted = {}  # type: ignore[assignment]
        takes_all = any(p.kind is p.VAR_KEYWORD for p in accepted.values())
        extra = {k: v for k, v in context.items() if takes_all or k in accepted}
        if name != "python" and name not in self.added:
            return factory(argument if sep else None, **extra)
        try:  # a factory of the session's own: its failure is a usage error, not a traceback
            return factory(argument if sep else None, **extra)
        except Exception as exc:
            shown = ":".join(spec.split(":")[1:3]) if name == "python" else name
            raise ValueError(f"the factory {shown} raised "
                             f"{type(exc).__name__}: {exc}") from None


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
})
