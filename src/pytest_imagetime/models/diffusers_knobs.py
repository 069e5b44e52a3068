"""The diffusers knobs model teams turn: LoRA weights, quantization, the attention backend,
``torch.compile``, a pipeline spread over several GPUs, VAE tiling and slicing.

Each knob is an override of a diffusers spec (docs/diffusers.md, "Overrides"). Its value is
parsed and its package and diffusers feature checked when the backend is built, so a run that
cannot use it stops at start-up with the override's name and the exact ``pip install``; it is
applied once, when the pipeline loads.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import ModelError
from .overrides import Converter, OverrideError, boolean, choice

# The denoiser components a pipeline may have: what quantization, attention and compile touch.
DENOISERS = ("transformer", "transformer_2", "unet", "prior")
# quantization= value -> (diffusers backend name, package, pip name)
QUANTIZATIONS: Mapping[str, tuple[str, str, str]] = {
    "bnb-4bit": ("bitsandbytes_4bit", "bitsandbytes", "bitsandbytes"),
    "bnb-8bit": ("bitsandbytes_8bit", "bitsandbytes", "bitsandbytes"),
    "torchao-int8": ("torchao", "torchao", "torchao"),
    "torchao-int4": ("torchao", "torchao", "torchao"),
    "torchao-float8": ("torchao", "torchao", "torchao"),
}
TORCHAO_CONFIGS = {"torchao-int8": "Int8WeightOnlyConfig", "torchao-int4": "Int4WeightOnlyConfig",
                   "torchao-float8": "Float8WeightOnlyConfig"}
COMPILES = ("false", "true", "full")
DEVICE_MAPS = ("balanced",)
ATTENTION_EXAMPLES = ("native", "flash", "_flash_3", "sage", "xformers", "flex")


@dataclass(frozen=True)
class Lora:
    """One LoRA: a Hub repository (``org/name``, or ``org/name/file.safetensors``), a local
    file or folder, and its scale."""

    source: str
    scale: float = 1.0

    def local_path(self) -> Path | None:
        path = Path(self.source).expanduser()
        return path if path.exists() else None

    def hub_parts(self) -> tuple[str, str | None]:
        """(repository id, weight file name or None)."""
        parts = self.source.split("/")
        return "/".join(parts[:2]), "/".join(parts[2:]) or None

    def as_config(self, revision: str) -> dict[str, Any]:
        return {"source": self.source, "scale": self.scale, "revision": revision}


def loras(raw: str) -> tuple[Lora, ...]:
    """``lora=SOURCE[@SCALE][+SOURCE[@SCALE]...]``."""
    found = []
    for part in raw.split("+"):
        source, sep, scale = part.strip().rpartition("@")
        if not sep:
            source, scale = scale, ""
        if not source.strip():
            raise ValueError("give SOURCE[@SCALE] joined by '+', e.g. "
                             "org/lora@0.8+/loras/b.safetensors")
        source = source.strip()
        try:
            value = float(scale) if sep else 1.0
        except ValueError:
            raise ValueError(f"scale {scale!r} of {source} is not a number") from None
        if source.startswith(("/", ".", "~")) and not Path(source).expanduser().exists():
            raise ValueError(f"no file or folder {source}")
        found.append(Lora(source, value))
    return tuple(found)


def components(raw: str) -> tuple[str, ...]:
    """``quantize=transformer+text_encoder_2``: pipeline component names."""
    names = tuple(n.strip() for n in raw.split("+") if n.strip())
    if not names:
        raise ValueError("give component names joined by '+', e.g. transformer+text_encoder_2")
    return names


def compile_choice(raw: str) -> str:
    lowered = raw.lower()
    if lowered in ("full", "regional"):
        return lowered
    try:
        return "auto" if boolean(raw) else "none"
    except ValueError:
        raise ValueError("give true, false, full or regional") from None


OVERRIDES: Mapping[str, Converter] = {
    "lora": loras,
    "quantization": choice(*QUANTIZATIONS),
    "quantize": components,
    "attention": str,
    "compile": compile_choice,
    "device_map": choice(*DEVICE_MAPS),
    "vae_tiling": boolean,
    "vae_slicing": boolean,
}


@dataclass(frozen=True)
class Knobs:
    """The knobs a spec turns; the defaults leave the pipeline as it loads."""

    lora: tuple[Lora, ...] = ()
    quantization: str | None = None
    quantize: tuple[str, ...] = ()  # () with a quantization: the denoiser
    attention: str | None = None
    compile: str = "none"  # none, auto (regional where the denoiser repeats blocks), full, regional
    device_map: str | None = None
    vae_tiling: bool = False
    vae_slicing: bool = False

    def pixel_config(self, lora_revisions: Sequence[str]) -> dict[str, Any]:
        """The knobs that change pixels, for the config (and so the image's input key). Where
        the same computation runs (compile, device_map, slicing) only rounds differently,
        like the device, and is recorded with each image instead."""
        config: dict[str, Any] = {}
        if self.lora:
            config["lora"] = [lora.as_config(revision)
                              for lora, revision in zip(self.lora, lora_revisions, strict=True)]
        if self.quantization:
            config["quantization"] = self.quantization
            config["quantize"] = list(self.quantize or ("denoiser",))
        if self.attention:
            config["attention"] = self.attention
        if self.vae_tiling:
            config["vae_tiling"] = True
        return config

    def details(self) -> dict[str, Any]:
        """The knobs in each image's record (set ones only)."""
        found: dict[str, Any] = {}
        if self.lora:
            found["lora"] = [{"source": lora.source, "scale": lora.scale} for lora in self.lora]
        if self.quantization:
            found["quantization"] = self.quantization
        if self.attention:
            found["attention"] = self.attention
        if self.device_map:
            found["device_map"] = self.device_map
        if self.vae_tiling:
            found["vae_tiling"] = True
        if self.vae_slicing:
            found["vae_slicing"] = True
        return found


def knobs_from(values: Mapping[str, Any], where: str) -> Knobs:
    """The knobs of parsed overrides; a combination that cannot work is an error here."""
    knobs = Knobs(lora=values.get("lora", ()), quantization=values.get("quantization"),
                  quantize=values.get("quantize", ()), attention=values.get("attention"),
                  compile=values.get("compile", "none"), device_map=values.get("device_map"),
                  vae_tiling=values.get("vae_tiling", False),
                  vae_slicing=values.get("vae_slicing", False))
    if knobs.quantize and not knobs.quantization:
        raise OverrideError(f"{where}: quantize= names what quantization= quantizes; give "
                            f"quantization={'|'.join(QUANTIZATIONS)} too")
    if knobs.device_map and values.get("cpu_offload", "none") != "none":
        raise OverrideError(f"{where}: device_map={knobs.device_map} places every component "
                            f"itself; drop cpu_offload=")
    return knobs


def check_installed(knobs: Knobs, where: str) -> None:
    """The packages and diffusers features the knobs need, before any item runs."""
    import diffusers

    version = diffusers.__version__
    if knobs.lora and importlib.util.find_spec("peft") is None:
        raise ImportError(f"{where}: lora= needs peft: pip install peft")
    if knobs.quantization:
        _, package, pip_name = QUANTIZATIONS[knobs.quantization]
        if importlib.util.find_spec(package) is None:
            raise ImportError(f"{where}: quantization={knobs.quantization} needs {package}: "
                              f"pip install {pip_name}")
        if not hasattr(diffusers, "PipelineQuantizationConfig"):
            raise ImportError(f"{where}: quantization= needs diffusers' "
                              f"PipelineQuantizationConfig, which diffusers {version} lacks: "
                              f"pip install -U diffusers")
    if knobs.attention:
        _check_attention(knobs.attention, where, version)


def _check_attention(name: str, where: str, version: str) -> None:
    import diffusers

    if not hasattr(diffusers.ModelMixin, "set_attention_backend"):
        raise ImportError(f"{where}: attention= needs set_attention_backend, which diffusers "
                          f"{version} lacks: pip install -U diffusers")
    from diffusers.models import attention_dispatch

    accepted = [member.value for member in attention_dispatch.AttentionBackendName]
    if name not in accepted:
        raise OverrideError(f"{where}: attention={name!r} is not an attention backend of "
                            f"diffusers {version}; accepted: {', '.join(accepted)}")
    # Private in diffusers: where it is missing the backend's own check runs at load.
    check = getattr(attention_dispatch, "_check_attention_backend_requirements", None)
    if check is not None:
        try:
            check(attention_dispatch.AttentionBackendName(name))
        except (RuntimeError, ImportError) as exc:
            raise ImportError(f"{where}: attention={name}: {exc}") from None


# ---------------------------------------------------------------- at load


def load_options(knobs: Knobs, dtype: Any, libraries: Mapping[str, str]) -> dict[str, Any]:
    """What from_pretrained takes for the knobs: the quantization config, the device map.
    ``libraries``: each component's library (``diffusers`` or ``transformers``), from the
    weights' model_index.json."""
    options: dict[str, Any] = {}
    if knobs.device_map:
        options["device_map"] = knobs.device_map
    if knobs.quantization:
        options["quantization_config"] = _quantization_config(knobs, dtype, libraries)
    return options


def _quantization_config(knobs: Knobs, dtype: Any, libraries: Mapping[str, str]) -> Any:
    assert knobs.quantization is not None
    wanted = knobs.quantize or tuple(name for name in DENOISERS if name in libraries)
    unknown = [name for name in wanted if name not in libraries]
    if unknown:
        raise ModelError(f"quantize= names {', '.join(unknown)}; the pipeline's components: "
                         f"{', '.join(sorted(libraries))}")
    mapping = {}
    for name in wanted:
        library = libraries[name]
        if library not in ("diffusers", "transformers"):
            raise ModelError(f"quantize= names {name}, a {library} component; only diffusers "
                             f"and transformers models quantize")
        mapping[name] = _component_quantization(knobs.quantization, library, dtype)
    config_class = importlib.import_module("diffusers").PipelineQuantizationConfig
    return config_class(quant_mapping=mapping)


def _component_quantization(quantization: str, library: str, dtype: Any) -> Any:
    """One component's config: the diffusers class for diffusers models, the transformers one
    for text encoders (their signatures differ, so one backend name cannot serve both)."""
    module = importlib.import_module(library)
    if quantization.startswith("bnb-"):
        bits = {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                "bnb_4bit_compute_dtype": dtype} if quantization == "bnb-4bit" \
            else {"load_in_8bit": True}
        return module.BitsAndBytesConfig(**bits)
    torchao = importlib.import_module("torchao.quantization")
    config_class = getattr(torchao, TORCHAO_CONFIGS[quantization], None)
    if config_class is None:
        raise ModelError(f"the installed torchao has no {TORCHAO_CONFIGS[quantization]}; "
                         f"pip install -U torchao")
    return module.TorchAoConfig(config_class())


def denoisers(pipe: Any) -> list[tuple[str, Any]]:
    return [(name, getattr(pipe, name)) for name in DENOISERS
            if getattr(pipe, name, None) is not None]


def apply_loras(pipe: Any, knobs: Knobs) -> None:
    """Each LoRA as an adapter of its own, set with its scale (not fused: the base weights
    stay as loaded)."""
    if not knobs.lora:
        return
    if not hasattr(pipe, "load_lora_weights"):
        raise ModelError(f"{type(pipe).__name__} takes no LoRA weights (no "
                         f"load_lora_weights); drop lora=")
    names = []
    for index, lora in enumerate(knobs.lora):
        name = f"lora{index}"
        local = lora.local_path()
        try:
            if local is not None and local.is_file():
                pipe.load_lora_weights(str(local.parent), weight_name=local.name,
                                       adapter_name=name)
            elif local is not None:
                pipe.load_lora_weights(str(local), adapter_name=name)
            else:
                repo, weight_name = lora.hub_parts()
                extra = {"weight_name": weight_name} if weight_name else {}
                pipe.load_lora_weights(repo, adapter_name=name, **extra)
        except Exception as exc:
            raise ModelError(f"lora={lora.source}: cannot load it into "
                             f"{type(pipe).__name__}: {type(exc).__name__}: {exc}") from exc
        names.append(name)
    pipe.set_adapters(names, adapter_weights=[lora.scale for lora in knobs.lora])


def apply_attention(pipe: Any, knobs: Knobs) -> None:
    """The backend on every denoiser's attention processors. diffusers also makes it the
    process's active backend; that is put back, so other pipelines keep their own."""
    if not knobs.attention:
        return
    from diffusers.models.attention_dispatch import _AttentionBackendRegistry

    before = _AttentionBackendRegistry._active_backend
    try:
        taken = 0
        for _, module in denoisers(pipe):
            module.set_attention_backend(knobs.attention)
            taken += sum(1 for m in module.modules()
                         if getattr(getattr(m, "processor", None), "_attention_backend",
                                    None) is not None)
    finally:
        _AttentionBackendRegistry.set_active_backend(before)
    if not taken:
        raise ModelError(f"{type(pipe).__name__}'s attention processors do not dispatch "
                         f"through diffusers' attention backends (they predate them); drop "
                         f"attention={knobs.attention}")


def apply_vae(pipe: Any, knobs: Knobs) -> None:
    vae = getattr(pipe, "vae", None)
    for wanted, method, key in ((knobs.vae_tiling, "enable_tiling", "vae_tiling"),
                                (knobs.vae_slicing, "enable_slicing", "vae_slicing")):
        if not wanted:
            continue
        if vae is None or not hasattr(vae, method):
            raise ModelError(f"{type(pipe).__name__}'s VAE has no {method}; drop {key}=")
        getattr(vae, method)()


def apply_compile(pipe: Any, knobs: Knobs) -> str | None:
    """``torch.compile`` on the denoiser: its repeated blocks only (regional compilation,
    compiled once and reused for every block) where the model declares them, else the whole
    module. Compiling happens at the first call. Returns what was compiled."""
    if knobs.compile == "none":
        return None
    used = []
    for name, module in denoisers(pipe):
        regional = (knobs.compile != "full" and hasattr(module, "compile_repeated_blocks")
                    and bool(getattr(module, "_repeated_blocks", None)))
        if knobs.compile == "regional" and not regional:
            raise ModelError(f"{type(module).__name__} declares no repeated blocks for "
                             f"regional compilation; use compile=true or compile=full")
        if regional:
            module.compile_repeated_blocks()
        else:
            module.compile()
        used.append(f"{name}:{'regional' if regional else 'full'}")
    if not used:
        raise ModelError(f"{type(pipe).__name__} has no transformer or unet to compile; "
                         f"drop compile=")
    return "+".join(used)
