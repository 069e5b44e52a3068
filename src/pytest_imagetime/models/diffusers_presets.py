"""The open-weight models the diffusers backend knows by name, with their published settings.

Steps, guidance and dtype follow each model card or the diffusers documentation of its
pipeline; ``size`` is the square resolution the model is made for (the run's
``--imagetime-size`` decides the generated size unless ``size=`` overrides it). Pipeline
classes are named, not imported: the backend looks them up in the installed diffusers when
it loads the weights, so a release without one fails with a clear message, not at import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

AUTO_PIPELINE = "DiffusionPipeline"  # reads the class from the weights' model_index.json


@dataclass(frozen=True)
class Preset:
    repo: str | None  # None: the spec names the weights (``diffusers:REPO_OR_PATH``)
    pipeline: str  # a diffusers class name
    steps: int | None = None  # None: the pipeline's own default
    guidance: float | None = None  # guidance_scale; None: the pipeline's own default
    true_cfg: float | None = None  # true_cfg_scale (Qwen-Image): real CFG with a negative prompt
    negative_prompt: str | None = None
    max_sequence_length: int | None = None
    dtype: str = "auto"  # auto: bfloat16 on CUDA, float16 on mps, float32 on the CPU
    variant: str | None = None  # which weight files: "fp16" reads *.fp16.safetensors
    size: int | None = None  # recommended square resolution
    edit: bool = False  # takes an input image: can complete a scaffold
    needs_image: bool = False  # edit-only: cannot render from text alone
    notes: str = ""


GENERIC = Preset(repo=None, pipeline=AUTO_PIPELINE)

PRESETS: Mapping[str, Preset] = {
    "flux-dev": Preset(
        "black-forest-labs/FLUX.1-dev", "FluxPipeline", steps=50, guidance=3.5,
        max_sequence_length=512, dtype="bfloat16", size=1024,
        notes="guidance-distilled; gated repository (accept the licence, then hf auth login)"),
    "flux-schnell": Preset(
        "black-forest-labs/FLUX.1-schnell", "FluxPipeline", steps=4, guidance=0.0,
        max_sequence_length=256, dtype="bfloat16", size=1024,
        notes="timestep-distilled: guidance must be 0, prompts at most 256 tokens"),
    "flux2-dev": Preset(
        "black-forest-labs/FLUX.2-dev", "Flux2Pipeline", steps=50, guidance=4.0,
        dtype="bfloat16", size=1024, edit=True,
        notes="takes reference images; about 80 GB of GPU memory in bfloat16 without "
              "offloading; gated repository"),
    "sdxl": Preset(
        "stabilityai/stable-diffusion-xl-base-1.0", "StableDiffusionXLPipeline", steps=40,
        guidance=5.0, dtype="float16", variant="fp16", size=1024,
        notes="base model only, no refiner; its VAE upcasts to float32 to decode"),
    "sd3.5-large": Preset(
        "stabilityai/stable-diffusion-3.5-large", "StableDiffusion3Pipeline", steps=28,
        guidance=3.5, dtype="bfloat16", size=1024, notes="gated repository"),
    "qwen-image": Preset(
        "Qwen/Qwen-Image-2512", "QwenImagePipeline", steps=50, true_cfg=4.0,
        negative_prompt=" ", dtype="bfloat16", size=1328,
        notes="true CFG runs only with a negative prompt, hence the single-space default"),
    "z-image-turbo": Preset(
        "Tongyi-MAI/Z-Image-Turbo", "ZImagePipeline", steps=9, guidance=0.0,
        dtype="bfloat16", size=1024,
        notes="distilled: 9 steps are 8 transformer passes; guidance must be 0"),
    "hunyuanimage-2.1": Preset(
        "hunyuanvideo-community/HunyuanImage-2.1-Diffusers", "HunyuanImagePipeline", steps=50,
        dtype="bfloat16", size=2048,
        notes="guidance comes from the repository's guider component (guidance= replaces "
              "its guidance_scale); sizes divisible by 64 (its VAE compresses 32 times)"),
    "flux-kontext": Preset(
        "black-forest-labs/FLUX.1-Kontext-dev", "FluxKontextPipeline", steps=28,
        guidance=2.5, dtype="bfloat16", size=1024, edit=True,
        notes="resizes its input image to a trained resolution near 1024x1024; gated"),
    "qwen-image-edit": Preset(
        "Qwen/Qwen-Image-Edit-2509", "QwenImageEditPlusPipeline", steps=40, true_cfg=4.0,
        negative_prompt=" ", dtype="bfloat16", size=1024, edit=True, needs_image=True,
        notes="edits an image: scaffold setting only"),
}


# Short family names and the preset each stands for (docs/models.md, "Family names"). The
# paper's FLUX is FLUX.2 [pro], a hosted model; ``flux`` takes the open weights of that
# generation, FLUX.2 [dev], so its scores sit beside the paper's FLUX row. The other open
# models the paper reports (Z-Image-Turbo, Qwen-Image-2512, HunyuanImage-2.1, SDXL base)
# are the presets of their families.
FAMILIES: Mapping[str, str] = {
    "flux": "flux2-dev",
    "flux2": "flux2-dev",
    "flux1": "flux-dev",
    "sd3": "sd3.5-large",
    "sd3.5": "sd3.5-large",
    "stable-diffusion-xl": "sdxl",
    "qwen": "qwen-image",
    "qwen-image-2512": "qwen-image",
    "z-image": "z-image-turbo",
    "hunyuan-image": "hunyuanimage-2.1",
    "hunyuanimage": "hunyuanimage-2.1",
}


def preset(name: str) -> Preset:
    """The preset registered as ``name``; ``diffusers`` itself is the generic one."""
    if name == "diffusers":
        return GENERIC
    if name not in PRESETS:
        raise ValueError(f"unknown diffusers preset {name!r}; known: diffusers, "
                         f"{', '.join(sorted(PRESETS))}")
    return PRESETS[name]


def edit_presets() -> tuple[str, ...]:
    return tuple(name for name, p in PRESETS.items() if p.edit)
