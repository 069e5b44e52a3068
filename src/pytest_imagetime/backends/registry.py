"""Backends by name: built-ins plus third-party ones from an entry-point group, what a loaded
backend must have, and the optional packages a backend needs with the ``pip install`` for them.

A spec is ``NAME`` or ``NAME:ARGUMENT`` (``procedural:copied``, ``files:/data/sheets``), or
``python:MODULE:ATTRIBUTE[:ARGUMENT]`` for a factory in any importable module; a session adds
the names its conftest.py files register. Backends are imported only when used, so heavy
libraries load only for the runs that need them.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any


class UnknownBackend(LookupError):
    pass


class IncompleteBackend(ValueError):
    """A loaded backend lacks a method every backend of its kind must have."""


@dataclass(frozen=True)
class Extra:
    """One of the package's extras: the packages it installs that a backend imports."""

    packages: tuple[str, ...]
    called: str | None = None  # how a message names it; None: the missing packages' names


# The extras of pyproject.toml that backends need, by extra name.
EXTRAS: Mapping[str, Extra] = {
    "diffusers": Extra(("torch", "diffusers", "transformers")),
    "openai": Extra(("openai",), "the openai package"),
    "gemini": Extra(("google.genai",), "the google-genai package"),
}


def install_hint(extra: str) -> str:
    """The exact command that installs an extra."""
    return f"pip install 'pytest-imagetime[{extra}]'"


def missing_extra(extra: str, who: str, missing: Sequence[str] = (),
                  alternative: str = "") -> ImportError:
    """The error for a backend whose extra is not installed: what it needs, the command, and
    what else the user may do (``alternative``)."""
    what = EXTRAS[extra].called or ", ".join(missing or EXTRAS[extra].packages)
    return ImportError(f"{who} needs {what}: {install_hint(extra)}"
                       + (f"; {alternative}" if alternative else ""))


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a finder that refuses it, a module without a spec
        return False


def require_extra(extra: str, who: str, alternative: str = "") -> None:
    """Raise ``missing_extra`` unless every package of the extra is installed; imports none of
    them, so a backend can check at construction what it loads at its first drawing."""
    missing = [p for p in EXTRAS[extra].packages if not _installed(p)]
    if missing:
        raise missing_extra(extra, who, missing, alternative)


def import_extra(extra: str, module: str, who: str, alternative: str = "") -> ModuleType:
    """``module`` of an extra, imported; ``missing_extra`` when it cannot be."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise missing_extra(extra, who, [module], alternative) from None


def check_required(backend: object, name: str, kind: str, required: Sequence[str],
                   base: str) -> None:
    """IncompleteBackend naming the backend and the methods it lacks, when it lacks any."""
    missing = [m for m in required if not hasattr(backend, m)]
    if missing:
        raise IncompleteBackend(
            f"the {kind} {name!r} ({type(backend).__module__}.{type(backend).__qualname__}) "
            f"has no {', '.join(missing)}; a {kind} needs {', '.join(required)} "
            f"(see {base})")
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
    # "module:function" that checks a created backend and gives it the optional features its
    # kind declares: (backend, name) -> backend.
    adapter: str
    # "module:attribute" of a {family name: registered name} table, read only when a name
    # is not registered itself: ``flux`` stands for a documented default preset.
    families: str | None = None
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
            names = ", ".join(sorted({*self.available(), *self.added, *self.family_table()}))
            raise UnknownBackend(f"unknown {self.kind} {name!r}; available: {names} "
                                 f"(third-party {self.kind}s register in the "
                                 f"{self.group!r} entry-point group, or are named as "
                                 f"{PYTHON_FORM})")
        factory: Callable[[str | None], Any] = _load(target)
        return factory

    def family_table(self) -> Mapping[str, str]:
        if self.families is None:
            return {}
        module_name, _, attribute = self.families.partition(":")
        table: Mapping[str, str] = getattr(importlib.import_module(module_name), attribute)
        return table

    def resolve(self, name: str) -> str:
        """The registered name a family name stands for (``flux`` -> ``flux2-dev``); a
        registered name, built in or added by the session, stands for itself."""
        if name in self.builtins or name in self.added:
            return name
        return self.family_table().get(name, name)

    def create(self, spec: str, **context: Any) -> Any:
        """Build a backend; ``context`` (e.g. ``options=``) goes to factories that take it, and
        so does ``name=`` (the registered name a family name resolves to), for one factory
        serving several names."""
        name, sep, argument = spec.partition(":")
        name = self.resolve(name.strip())
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
        adapt: Callable[[Any, str], Any] = _load(self.adapter)
        if name != "python" and name not in self.added:
            return adapt(factory(argument if sep else None, **extra), name)
        try:  # a factory of the session's own: its failure is a usage error, not a traceback
            built = factory(argument if sep else None, **extra)
        except Exception as exc:
            shown = ":".join(spec.split(":")[1:3]) if name == "python" else name
            raise ValueError(f"the factory {shown} raised "
                             f"{type(exc).__name__}: {exc}") from None
        return adapt(built, name)


def _load(target: str) -> Any:
    """The object a ``module:attribute`` target names."""
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)


_DIFFUSERS = "pytest_imagetime.models.diffusers_backend:DiffusersModel"
# The benchmark's open models and their neighbours (docs/diffusers.md has the table);
# ``diffusers:REPO_OR_PATH`` takes any other pipeline.
DIFFUSERS_PRESETS = ("flux-dev", "flux-schnell", "flux2-dev", "sdxl", "sd3.5-large",
                     "qwen-image", "z-image-turbo", "hunyuanimage-2.1", "flux-kontext",
                     "qwen-image-edit")

# The built-in models that call a provider's hosted API, each with its own key variable.
HOSTED_MODELS = frozenset({"openai-images", "gemini-image", "seedream", "bfl"})

MODELS = Registry("model", "imagetime.models", {
    "procedural": "pytest_imagetime.models.procedural:ProceduralModel",
    "files": "pytest_imagetime.models.files:FilesModel",
    "diffusers": _DIFFUSERS,
    **dict.fromkeys(DIFFUSERS_PRESETS, _DIFFUSERS),
    "openai-images": "pytest_imagetime.models.openai_images:OpenAIImagesModel",
    "gemini-image": "pytest_imagetime.models.gemini_images:GeminiImageModel",
    "seedream": "pytest_imagetime.models.seedream:SeedreamModel",
    "bfl": "pytest_imagetime.models.bfl:BflModel",
}, "pytest_imagetime.models.base:adapt_model",
    families="pytest_imagetime.models.diffusers_presets:FAMILIES")
JUDGES = Registry("judge", "imagetime.judges", {
    "vlm": "pytest_imagetime.judges.vlm:VlmJudge",
    "pixel": "pytest_imagetime.judges.pixel:PixelJudge",
    "replay": "pytest_imagetime.judges.replay:ReplayJudge",
    "vlm-chain": "pytest_imagetime.judges.chain:ChainJudge",
    "vlm-feedback": "pytest_imagetime.judges.feedback:FeedbackJudge",
    "vlm-instance": "pytest_imagetime.judges.instance:InstanceJudge",
}, "pytest_imagetime.judges.base:adapt_judge")
