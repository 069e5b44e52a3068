"""Model ``diffusers``: open-weight image models through Hugging Face diffusers pipelines.

Specs: a preset (``flux-dev``, ``flux-dev:steps=20,guidance=3.5``), any pipeline by repository
or folder (``diffusers:org/repo``, ``diffusers:/models/x:steps=2,dtype=float32``), or a preset's
class and settings over other weights (``flux-dev:org/fine-tune``). docs/diffusers.md has the
preset table and every override; the knobs (LoRA, quantization, attention, compile, device
map, VAE) live in diffusers_knobs.py, the resolving of the weights the key names in
weights_revision.py.

Building a model only parses its spec, so collection and the xdist controller never touch the
weights. The first generation in a process loads them once, through ``from_pretrained`` (the
user's Hugging Face cache or a local folder), and keeps the pipeline for every later item and
for every other spec over the same weights. A load that fails is remembered, so each later item
fails at once with the same reason instead of loading again.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from ..backends.registry import require_extra
from . import diffusers_knobs
from .base import Generated, GenerationRequest, ImageModel, ModelError, ModelOptions
from .diffusers_knobs import Knobs, check_installed, knobs_from
from .diffusers_presets import AUTO_PIPELINE, Preset, edit_presets, preset
from .overrides import (
    Converter,
    boolean,
    choice,
    non_negative_float,
    parse_overrides,
    positive_int,
    split_argument,
    whole_number,
)
from .prompt_tokens import prompt_token_counts
from .weights_revision import COMMIT, hub_revision, local_revision

SIZE_MULTIPLE = 16  # latent patches of 2 over a VAE that downsamples 8 times
DTYPES = ("auto", "float32", "float16", "bfloat16")
OFFLOADS = ("none", "model", "sequential")
SCHEDULER_EXAMPLES = ("EulerDiscreteScheduler", "EulerAncestralDiscreteScheduler",
                      "DPMSolverMultistepScheduler", "DDIMScheduler", "UniPCMultistepScheduler",
                      "FlowMatchEulerDiscreteScheduler")
MAX_REASON = 600  # characters of an underlying error kept in a message
# Pipeline arguments and the override that sets each, for messages.
ARGUMENT_OVERRIDES = {"num_inference_steps": "steps", "guidance_scale": "guidance",
                      "true_cfg_scale": "true_cfg", "negative_prompt": "negative_prompt",
                      "max_sequence_length": "max_sequence_length"}


def _multiple_of_16(raw: str) -> int:
    accepted = f"give a multiple of {SIZE_MULTIPLE}, e.g. 1024"
    value = whole_number(raw, accepted)
    if value < SIZE_MULTIPLE or value % SIZE_MULTIPLE:
        raise ValueError(accepted)
    return value


def _text(raw: str) -> str:
    if not raw:
        raise ValueError("give a value")
    return raw


OVERRIDES: Mapping[str, Converter] = {
    "steps": positive_int,
    "guidance": non_negative_float,
    "true_cfg": non_negative_float,
    "size": _multiple_of_16,
    "dtype": choice(*DTYPES),
    "scheduler": _text,
    "cpu_offload": choice(*OFFLOADS),
    "revision": _text,
    "variant": _text,
    "negative_prompt": str,
    "max_sequence_length": positive_int,
    "edit": boolean,
    **diffusers_knobs.OVERRIDES,
}


def _check_scheduler(name: str, where: str) -> None:
    import diffusers

    found = getattr(diffusers, name, None)
    if not (isinstance(found, type) and name.endswith("Scheduler")):
        raise ValueError(f"{where}: scheduler={name!r} is not a diffusers scheduler class; "
                         f"e.g. {', '.join(SCHEDULER_EXAMPLES)}")


@dataclass(frozen=True)
class Settings:
    """A preset's defaults with the spec's overrides applied; everything config() reports."""

    pipeline: str
    source: str
    steps: int | None
    guidance: float | None
    true_cfg: float | None
    negative_prompt: str | None
    max_sequence_length: int | None
    dtype: str
    variant: str | None
    revision: str | None
    scheduler: str | None
    size: int | None  # None: the run's --imagetime-size
    cpu_offload: str
    edit: bool
    needs_image: bool
    knobs: Knobs


def _settings(base: Preset, source: str, values: Mapping[str, Any],
              knobs: Knobs) -> Settings:
    return Settings(
        pipeline=base.pipeline, source=source, steps=values.get("steps", base.steps),
        guidance=values.get("guidance", base.guidance),
        true_cfg=values.get("true_cfg", base.true_cfg),
        negative_prompt=values.get("negative_prompt", base.negative_prompt),
        max_sequence_length=values.get("max_sequence_length", base.max_sequence_length),
        dtype=values.get("dtype", base.dtype), variant=values.get("variant", base.variant),
        revision=values.get("revision"), scheduler=values.get("scheduler"),
        size=values.get("size"), cpu_offload=values.get("cpu_offload", "none"),
        edit=values.get("edit", base.edit), needs_image=base.needs_image, knobs=knobs,
    )


@dataclass(frozen=True)
class LoadKey:
    """What makes two specs share one loaded pipeline in a process."""

    pipeline: str
    source: str
    revision: str | None  # a Hub source's resolved commit where known: what the key names
    variant: str | None
    dtype: str  # resolved: never "auto"
    device: str
    offload: str
    scheduler: str | None
    knobs: Knobs


@dataclass(frozen=True)
class Loaded:
    pipe: Any
    revision: str  # the snapshot commit, or a digest of a local folder's weight files
    guider: Any  # the repository's guider component (HunyuanImage), before guidance=
    compiled: str | None = None  # what torch.compile wraps: "transformer:regional", ...


# One entry per LoadKey in this process: the pipeline, or why it could not be loaded.
PIPELINES: dict[LoadKey, Loaded | str] = {}


def forget_pipelines() -> None:
    """Drops every loaded pipeline and remembered failure (tests; freeing memory)."""
    PIPELINES.clear()


class DiffusersModel(ImageModel):
    """One square motion sheet per request from a diffusers pipeline; no quality retries."""

    supports_batch = True
    may_draw_on_gpu = True  # draws_on_gpu answers at the first drawing: it asks torch

    def __init__(self, argument: str | None = None, *, name: str = "diffusers",
                 options: ModelOptions | None = None) -> None:
        # At construction, before any item runs; the libraries load at the first drawing.
        require_extra("diffusers", "the diffusers backend")
        base = preset(name)
        target, overrides = split_argument(argument)
        where = f"model {name}"
        values = parse_overrides(overrides, OVERRIDES, where)
        source = target or base.repo
        if source is None:
            raise ValueError(f"{where} needs weights: --imagetime-model=diffusers:ORG/REPO or "
                             f"diffusers:/local/dir, overrides after a further ':' "
                             f"(diffusers:/local/dir:steps=4)")
        if "scheduler" in values:
            _check_scheduler(values["scheduler"], where)
        knobs = knobs_from(values, where)
        if knobs != Knobs():
            check_installed(knobs, where)
        self.preset_name = name
        self.settings = _settings(base, source, values, knobs)
        self.options = options or ModelOptions()
        self._spec = f"{name}:{argument}" if argument else name

    @property
    def name(self) -> str:
        return self._spec

    @property
    def accepts_reference(self) -> bool:
        """True for edit-capable pipelines: they can complete a scaffold."""
        return self.settings.edit

    @functools.cached_property
    def cpu_bound(self) -> bool:
        """On the CPU torch spreads every operation over all cores: the harness then stores
        and measures each sheet between two drawings instead of on a thread beside them."""
        return self._device() == "cpu"

    @property
    def draws_on_gpu(self) -> bool:
        """Kernels are dispatched from Python: ``--imagetime-model-process=auto`` then draws
        in a child process, away from the harness's own use of the interpreter lock."""
        return not self.cpu_bound

    def config(self) -> Mapping[str, Any]:
        """What decides the pixels, the weights actually resolved included. Device,
        offloading, device_map, compile and VAE slicing are left out: moving a run to
        another GPU or compiling it must not regenerate its sheets."""
        s = self.settings
        return {"backend": "diffusers", "preset": self.preset_name, "pipeline": s.pipeline,
                "source": s.source, "revision": s.revision,
                "resolved_revision": self.resolved_revision, "variant": s.variant,
                "dtype": s.dtype, "steps": s.steps, "guidance": s.guidance,
                "true_cfg": s.true_cfg, "negative_prompt": s.negative_prompt,
                "max_sequence_length": s.max_sequence_length, "scheduler": s.scheduler,
                "size": s.size, "edit": s.edit,
                **s.knobs.pixel_config(self.lora_revisions)}

    @functools.cached_property
    def resolved_revision(self) -> str:
        """The weights this spec names now: a Hub commit or a local folder's digest
        (weights_revision.py). Resolved once per process, so a run keys every item alike."""
        return _weights_revision(self.settings.source, self.settings.revision,
                                 self.options.calls)

    @functools.cached_property
    def lora_revisions(self) -> tuple[str, ...]:
        revisions = []
        for lora in self.settings.knobs.lora:
            local = lora.local_path()
            revisions.append(local_revision(local) if local is not None else
                             hub_revision(lora.hub_parts()[0], None, self.options.calls))
        return tuple(revisions)

    def generate(self, *, request: GenerationRequest) -> Generated:
        return self._render([request])[0]

    def generate_batch(self, *, requests: Sequence[GenerationRequest]) -> list[Generated]:
        """One pipeline call for requests that share size and kind. Edits go one at a time:
        some edit pipelines read a list of images as several references for one prompt."""
        if not requests:
            return []
        first = requests[0]
        shared = all(r.size == first.size and r.kind == first.kind and r.scaffold is None
                     for r in requests)
        if shared:
            return self._render(requests)
        return [self._render([r])[0] for r in requests]

    # ------------------------------------------------------------ one pipeline call

    def _render(self, requests: Sequence[GenerationRequest]) -> list[Generated]:
        size = self._size(requests[0])
        self._check_image_input(requests)
        loaded = self._loaded()
        arguments = self._call_arguments(loaded, requests, size)
        started = time.perf_counter()
        output = self._call(loaded, arguments, size, len(requests))
        seconds = time.perf_counter() - started
        images = list(getattr(output, "images", None) or [])
        _check_images(output, images, requests)
        details = self._details(loaded, size, seconds, len(requests))
        return [Generated(image.convert("RGB"), {**details, "prompt_tokens": prompt_token_counts(
                    loaded.pipe, request.text, self.settings.max_sequence_length)})
                for image, request in zip(images, requests, strict=True)]

    def _size(self, request: GenerationRequest) -> int:
        size = self.settings.size or request.size
        if size % SIZE_MULTIPLE:
            raise ModelError(f"size {size} is not a multiple of {SIZE_MULTIPLE}, which "
                             f"diffusers pipelines need; use --imagetime-size=1024 (or size= "
                             f"in the model spec)")
        return size

    def _check_image_input(self, requests: Sequence[GenerationRequest]) -> None:
        if any(r.scaffold is not None for r in requests) and not self.accepts_reference:
            raise ModelError(f"{self.name} renders from text only and cannot complete a "
                             f"scaffold; edit-capable presets: {', '.join(edit_presets())} "
                             f"(or diffusers:REPO:edit=true for another edit pipeline)")
        if self.settings.needs_image and any(r.scaffold is None for r in requests):
            raise ModelError(f"{self.name} edits an image and cannot render from text alone: "
                             f"run it in the scaffold setting (--imagetime-setting=scaffold)")

    def _call_arguments(self, loaded: Loaded, requests: Sequence[GenerationRequest],
                        size: int) -> dict[str, Any]:
        import torch

        s = self.settings
        count = len(requests)
        arguments: dict[str, Any] = {
            "prompt": [r.text for r in requests], "height": size, "width": size,
            # CPU generators draw the same noise on any device and with offloading, so a seed
            # gives the same starting latents wherever a run goes.
            "generator": [torch.Generator(device="cpu").manual_seed(r.seed) for r in requests],
        }
        guidance = None if _uses_guider(loaded) else s.guidance
        negative = None if s.negative_prompt is None else [s.negative_prompt] * count
        optional = {"num_inference_steps": s.steps, "guidance_scale": guidance,
                    "true_cfg_scale": s.true_cfg, "negative_prompt": negative,
                    "max_sequence_length": s.max_sequence_length}
        for argument, value in optional.items():
            if value is None:
                continue
            if not _takes(loaded.pipe, argument):
                raise ModelError(f"{type(loaded.pipe).__name__} takes no {argument}; drop "
                                 f"{ARGUMENT_OVERRIDES[argument]}= from {self.name}")
            arguments[argument] = value
        if _takes(loaded.pipe, "max_area"):
            arguments["max_area"] = size * size  # Kontext rescales its output to max_area
        if requests[0].scaffold is not None:
            arguments["image"] = requests[0].scaffold
        return arguments

    def _call(self, loaded: Loaded, arguments: Mapping[str, Any], size: int,
              count: int) -> Any:
        import torch

        pipe = loaded.pipe
        try:
            with _guidance(loaded, self.settings.guidance):
                return pipe(**arguments)
        except torch.cuda.OutOfMemoryError as exc:
            torch.cuda.empty_cache()
            batch = f" in a batch of {count}" if count > 1 else ""
            raise ModelError(
                f"out of GPU memory rendering {size}x{size}{batch} on {self._device()}: "
                f"{_reason(exc)}; try cpu_offload=model, a smaller size, "
                f"{'a smaller --imagetime-batch-size, ' if count > 1 else ''}"
                f"or fewer workers per GPU") from None
        except Exception as exc:
            raise ModelError(f"{type(pipe).__name__} failed: {type(exc).__name__}: "
                             f"{_reason(exc)}") from exc

    def _details(self, loaded: Loaded, size: int, seconds: float, count: int) -> dict[str, Any]:
        import diffusers

        s, pipe = self.settings, loaded.pipe
        details = {
            "pipeline": type(pipe).__name__, "source": s.source, "revision": loaded.revision,
            "device": self._device(), "dtype": self._dtype(), "cpu_offload": s.cpu_offload,
            "steps": s.steps or _default(pipe, "num_inference_steps"),
            "guidance": self._guidance_used(loaded), "true_cfg": s.true_cfg,
            "scheduler": type(pipe.scheduler).__name__,
            "size": size, "batch": count, "seconds": round(seconds, 3),
            "diffusers_version": diffusers.__version__, **s.knobs.details(),
        }
        if loaded.compiled:
            details["compile"] = loaded.compiled
        return details

    def _guidance_used(self, loaded: Loaded) -> Any:
        """The override, else the guider's or the pipeline's own default."""
        if self.settings.guidance is not None:
            return self.settings.guidance
        if _uses_guider(loaded):
            return getattr(loaded.guider, "guidance_scale", None)
        return _default(loaded.pipe, "guidance_scale")

    # ------------------------------------------------------------ loading

    def _device(self) -> str:
        device = self.options.device()
        if device is not None:
            return device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def _dtype(self) -> str:
        """``auto``: bfloat16 on CUDA, float16 on Apple's mps (bfloat16 support there is
        recent), float32 on the CPU, where half precision is slow."""
        if self.settings.dtype != "auto":
            return self.settings.dtype
        device = self._device()
        return {"cpu": "float32", "mps": "float16"}.get(device, "bfloat16")

    def _load_key(self) -> LoadKey:
        s = self.settings
        # A resolved Hub commit is loaded as such: the pixels then come from the weights
        # the input key names, even when the branch moves meanwhile.
        resolved = self.resolved_revision
        revision = resolved if COMMIT.fullmatch(resolved) else s.revision
        return LoadKey(pipeline=s.pipeline, source=s.source, revision=revision,
                       variant=s.variant, dtype=self._dtype(), device=self._device(),
                       offload=s.cpu_offload, scheduler=s.scheduler, knobs=s.knobs)

    def _loaded(self) -> Loaded:
        key = self._load_key()
        if key not in PIPELINES:
            try:
                PIPELINES[key] = _load(key)
            except ModelError as exc:
                PIPELINES[key] = str(exc)
        entry = PIPELINES[key]
        if isinstance(entry, str):
            raise ModelError(entry)
        return entry


# ---------------------------------------------------------------- loading, once per process


def _load(key: LoadKey) -> Loaded:
    import diffusers
    import torch

    pipeline_class = getattr(diffusers, key.pipeline, None)
    if pipeline_class is None:
        raise ModelError(f"diffusers {diffusers.__version__} has no {key.pipeline}; a newer "
                         f"release may: pip install -U diffusers")
    local = _local_dir(key.source)
    _check_device_knobs(key)
    if key.knobs.quantization and key.device.startswith("cuda:"):
        torch.cuda.set_device(key.device)  # quantizers load onto the current GPU, not .to()'s
    options = _load_options(key)
    try:
        options.update(diffusers_knobs.load_options(
            key.knobs, options.get("dtype", options.get("torch_dtype")),
            _component_libraries(key, local) if key.knobs.quantization else {}))
        pipe = pipeline_class.from_pretrained(str(local or key.source), **options)
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(_load_failure(key, local, exc)) from exc
    try:
        diffusers_knobs.apply_loras(pipe, key.knobs)
        if not key.knobs.device_map:
            _place(pipe, key)
        if key.scheduler:
            scheduler_class = getattr(diffusers, key.scheduler)
            pipe.scheduler = scheduler_class.from_config(pipe.scheduler.config)
        diffusers_knobs.apply_attention(pipe, key.knobs)
        diffusers_knobs.apply_vae(pipe, key.knobs)
        compiled = diffusers_knobs.apply_compile(pipe, key.knobs)
    except torch.cuda.OutOfMemoryError as exc:
        torch.cuda.empty_cache()
        raise ModelError(f"out of GPU memory moving {key.source} to {key.device}: "
                         f"{_reason(exc)}; try cpu_offload=model (or sequential)") from None
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"cannot set up {key.source} on {key.device}: "
                         f"{type(exc).__name__}: {_reason(exc)}") from exc
    pipe.set_progress_bar_config(disable=True)
    return Loaded(pipe=pipe, revision=_loaded_revision(key, local),
                  guider=getattr(pipe, "guider", None), compiled=compiled)


def _load_options(key: LoadKey) -> dict[str, Any]:
    import torch
    from diffusers.utils import deprecation_utils

    # Recent releases take dtype= and deprecate torch_dtype=; older ones know only the latter.
    dtype_argument = "dtype" if hasattr(deprecation_utils, "_resolve_dtype") else "torch_dtype"
    options: dict[str, Any] = {dtype_argument: getattr(torch, key.dtype)}
    if key.revision:
        options["revision"] = key.revision
    if key.variant:
        options["variant"] = key.variant
    return options


def _place(pipe: Any, key: LoadKey) -> None:
    """On the device, or offloaded: model (one component on the GPU at a time) or sequential
    (one layer at a time: slowest, least memory)."""
    if key.offload == "none":
        pipe.to(key.device)
        return
    if not key.device.startswith("cuda"):
        raise ModelError(f"cpu_offload={key.offload} needs a CUDA device; this process uses "
                         f"{key.device}")
    if key.offload == "model":
        pipe.enable_model_cpu_offload(device=key.device)
    else:
        pipe.enable_sequential_cpu_offload(device=key.device)


def _local_dir(source: str) -> Path | None:
    """The folder a source names, or None for a Hub repository id (``org/name``)."""
    path = Path(source).expanduser()
    if path.is_dir():
        return path
    if source.startswith(("/", ".", "~")) or source.count("/") > 1:
        raise ModelError(f"no directory {path}: give a local diffusers folder (with "
                         f"model_index.json) or a Hub repository id such as org/name; "
                         f"`hf download REPO --local-dir DIR` fetches one")
    return None


def _load_failure(key: LoadKey, local: Path | None, exc: Exception) -> str:
    message = (f"cannot load {key.source} as {key.pipeline}: {type(exc).__name__}: "
               f"{_reason(exc)}")
    found = _folder_class(local) if local else None
    if found and key.pipeline != AUTO_PIPELINE and found != key.pipeline:
        return f"{message}; the folder holds a {found}, this preset needs a {key.pipeline}"
    if local:
        return f"{message}; is {local} a diffusers folder (model_index.json)?"
    return (f"{message}; if the weights are not in the Hugging Face cache and there is no "
            f"network, download them first with `hf download {key.source}` (gated "
            f"repositories need `hf auth login`) or give a local directory")


def _folder_class(folder: Path) -> str | None:
    import json

    try:
        found = json.loads((folder / "model_index.json").read_text(
            encoding="utf-8")).get("_class_name")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) else None


def _weights_revision(source: str, revision: str | None, online: bool) -> str:
    path = Path(source).expanduser()
    if path.is_dir():
        return local_revision(path)
    return hub_revision(source, revision, online)


def _loaded_revision(key: LoadKey, local: Path | None) -> str:
    """The weights actually loaded: a Hub snapshot's commit (the cache holds it now), or
    ``local-`` and the digest of the folder's files that the input key holds too."""
    if local is not None:
        return local_revision(local)
    return hub_revision(key.source, key.revision, online=False)


def _check_device_knobs(key: LoadKey) -> None:
    """Knobs that need CUDA, refused on another device before anything loads."""
    cuda = key.device.startswith("cuda")
    if key.knobs.device_map and not cuda:
        raise ModelError(f"device_map={key.knobs.device_map} spreads the pipeline over CUDA "
                         f"GPUs; this process uses {key.device}")
    if key.knobs.quantization and key.knobs.quantization.startswith("bnb-") and not cuda:
        raise ModelError(f"quantization={key.knobs.quantization} runs bitsandbytes kernels, "
                         f"which need a CUDA device; this process uses {key.device} (on the "
                         f"CPU: quantization=torchao-int8)")


def _component_libraries(key: LoadKey, local: Path | None) -> dict[str, str]:
    """Each component's library, from the weights' model_index.json."""
    import diffusers

    try:
        index = diffusers.DiffusionPipeline.load_config(str(local or key.source),
                                                        revision=key.revision)
    except Exception as exc:
        raise ModelError(_load_failure(key, local, exc)) from exc
    return {name: entry[0] for name, entry in index.items()
            if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)}


# ---------------------------------------------------------------- pipeline calls


def _parameters(pipe: Any) -> Mapping[str, inspect.Parameter]:
    return inspect.signature(type(pipe).__call__).parameters


def _takes(pipe: Any, argument: str) -> bool:
    """Named parameters only: pipelines swallow deprecated arguments in **kwargs."""
    return argument in _parameters(pipe)


def _default(pipe: Any, argument: str) -> Any:
    parameter = _parameters(pipe).get(argument)
    if parameter is None or parameter.default is inspect.Parameter.empty:
        return None
    return parameter.default


def _uses_guider(loaded: Loaded) -> bool:
    """Guidance lives in a guider component, not in the call (HunyuanImage)."""
    return loaded.guider is not None and "guidance_scale" not in _parameters(loaded.pipe)


@contextmanager
def _guidance(loaded: Loaded, guidance: float | None) -> Iterator[None]:
    """A guider pipeline runs with guidance= in its guider, then gets the repository's back:
    the pipeline is shared by every spec over the same weights."""
    if not _uses_guider(loaded) or guidance is None:
        yield
        return
    loaded.pipe.guider = loaded.guider.new(guidance_scale=guidance)
    try:
        yield
    finally:
        loaded.pipe.guider = loaded.guider


def _check_images(output: Any, images: Sequence[Image.Image],
                  requests: Sequence[GenerationRequest]) -> None:
    """A pipeline can return a picture that is no answer: say why instead of scoring it."""
    if len(images) != len(requests):
        raise ModelError(f"the pipeline returned {len(images)} images for {len(requests)} "
                         f"prompts")
    flagged = getattr(output, "nsfw_content_detected", None) or [False] * len(images)
    problems = []
    for request, image, nsfw in zip(requests, images, flagged, strict=False):
        if nsfw:
            problems.append(f"{request.case.id}: the pipeline's safety checker flagged the "
                            f"image and blacked it out (nsfw_content_detected)")
        elif _is_black(image):
            problems.append(f"{request.case.id}: the image is entirely black; without a "
                            f"safety flag the usual cause is NaNs in a half-precision VAE: "
                            f"try dtype=float32 or bfloat16")
    if problems:
        raise ModelError("; ".join(problems))


def _is_black(image: Image.Image) -> bool:
    extrema = image.convert("RGB").getextrema()
    return all(high == 0 for _, high in extrema)  # type: ignore[misc]


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= MAX_REASON else text[:MAX_REASON] + "..."

