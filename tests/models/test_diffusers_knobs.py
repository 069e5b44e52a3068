"""The diffusers knobs on tiny random pipelines: LoRA, quantization, attention backends,
compile, VAE tiling and slicing, device maps, and the weights the input key names."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from torch import nn

from pytest_imagetime.backends.registry import MODELS
from pytest_imagetime.models.base import GenerationRequest, ModelError, ModelOptions
from pytest_imagetime.models.diffusers_backend import PIPELINES, DiffusersModel, forget_pipelines
from tests.builders import make_case
from tests.tiny_pipelines import save_pipeline

CPU = ModelOptions(devices=("cpu",))
SIZE = 64
COMMIT_A, COMMIT_B = "a" * 40, "b" * 40


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-knobs")
    return {kind: save_pipeline(kind, root / kind) for kind in ("sd", "flux")}


@pytest.fixture(scope="module")
def loras(tiny: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two random LoRAs of the tiny Stable Diffusion UNet, each saved as one file."""
    import diffusers
    from peft import LoraConfig
    from peft.utils import get_peft_model_state_dict

    root = tmp_path_factory.mktemp("loras")
    pipeline_class: Any = diffusers.StableDiffusionPipeline  # untyped in diffusers
    found = {}
    for seed, name in ((1, "a"), (2, "b")):
        import torch

        torch.manual_seed(seed)
        pipe = pipeline_class.from_pretrained(str(tiny["sd"]))
        pipe.unet.add_adapter(LoraConfig(r=2, lora_alpha=2, init_lora_weights=False,
                                         target_modules=["to_q", "to_k", "to_v", "to_out.0"]))
        pipeline_class.save_lora_weights(
            root / name, unet_lora_layers=get_peft_model_state_dict(pipe.unet),
            weight_name=f"{name}.safetensors")
        found[name] = root / name / f"{name}.safetensors"
    return found


@pytest.fixture(autouse=True)
def offline_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hub ids resolve from the cache alone: no test waits on a network it does not have."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(autouse=True)
def fresh_pipelines() -> Iterator[None]:
    forget_pipelines()
    yield
    forget_pipelines()


def model(spec: str, name: str = "diffusers", options: ModelOptions = CPU) -> DiffusersModel:
    return DiffusersModel(spec, name=name, options=options)


def request(seed: int = 1) -> GenerationRequest:
    return GenerationRequest(case=make_case(), setting="prompt-only", size=SIZE, seed=seed)


def pixels(image: Image.Image) -> np.ndarray[Any, Any]:
    return np.asarray(image, dtype=np.int16)


# ---------------------------------------------------------------- family names


def test_a_family_name_resolves_to_its_documented_preset() -> None:
    flux = MODELS.create("flux:steps=20", options=CPU)
    assert flux.name == "flux2-dev:steps=20"  # names the run directory
    assert flux.config()["preset"] == "flux2-dev"
    assert flux.config()["source"] == "black-forest-labs/FLUX.2-dev"
    for family, target in (("flux1", "flux-dev"), ("z-image", "z-image-turbo"),
                           ("hunyuan-image", "hunyuanimage-2.1"), ("qwen-image", "qwen-image"),
                           ("sdxl", "sdxl"), ("sd3.5", "sd3.5-large")):
        assert MODELS.create(family, options=CPU).name == target


def test_a_family_name_takes_weights_and_overrides(tiny: dict[str, Path]) -> None:
    backend = MODELS.create(f"flux1:{tiny['flux']}:steps=2,dtype=float32", options=CPU)
    assert backend.name == f"flux-dev:{tiny['flux']}:steps=2,dtype=float32"
    assert backend.generate(request=request()).details["pipeline"] == "FluxPipeline"


def test_an_unknown_name_lists_the_family_names() -> None:
    from pytest_imagetime.backends.registry import UnknownBackend

    with pytest.raises(UnknownBackend, match=r"unknown model 'fluxx'; available: .*flux, "
                                             r"flux-dev.*z-image, z-image-turbo"):
        MODELS.create("fluxx")


def test_the_plugin_records_the_preset_a_family_name_resolved_to(
        pytester: pytest.Pytester, tiny: dict[str, Path]) -> None:
    from tests.builders import case_dict, write_case_file

    write_case_file(pytester.path / "kitchen.yaml", [case_dict()])
    result = pytester.runpytest("kitchen.yaml",
                                f"--imagetime-model=flux1:{tiny['flux']}:steps=2,dtype=float32",
                                f"--imagetime-size={SIZE}", "--imagetime-judge=pixel")
    assert "errors" not in result.parseoutcomes()
    records = list((pytester.path / "reports").rglob("images/*.json"))
    assert len(records) == 1 and records[0].parent.parent.name.startswith("flux-dev-")
    import json

    record = json.loads(records[0].read_text())
    assert record["model"].startswith("flux-dev:")
    assert record["model_config"]["preset"] == "flux-dev"


# ---------------------------------------------------------------- the weights in the key


def test_swapped_local_weights_change_the_key(tmp_path: Path) -> None:
    folder = save_pipeline("sd", tmp_path / "sd")
    before = model(f"{folder}:steps=2").config()
    assert before["resolved_revision"].startswith("local-")
    assert model(f"{folder}:steps=2").config() == before  # unchanged weights, same key
    weights = next(folder.glob("unet/*.safetensors"))
    stat = weights.stat()  # retrained weights of the same size, written later
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    after = model(f"{folder}:steps=2").config()
    assert after["resolved_revision"] != before["resolved_revision"]
    details = model(f"{folder}:steps=2").generate(request=request()).details
    assert details["revision"] == after["resolved_revision"]


def _cache(root: Path, repo: str, refs: dict[str, str]) -> None:
    folder = root / f"models--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True, exist_ok=True)
    for ref, commit in refs.items():
        (folder / "refs" / ref).write_text(commit)
        (folder / "snapshots" / commit).mkdir(parents=True, exist_ok=True)


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    return tmp_path / "hub"


def test_a_hub_update_changes_the_key_and_the_load_pins_the_commit(hub_cache: Path) -> None:
    _cache(hub_cache, "org/repo", {"main": COMMIT_A})
    first = model("org/repo:steps=2")
    assert first.config()["resolved_revision"] == COMMIT_A
    assert first._load_key().revision == COMMIT_A  # loaded as keyed, whatever main is later
    _cache(hub_cache, "org/repo", {"main": COMMIT_B})
    assert model("org/repo:steps=2").config()["resolved_revision"] == COMMIT_B


def test_a_hub_revision_resolves_through_its_ref(hub_cache: Path) -> None:
    _cache(hub_cache, "org/repo", {"main": COMMIT_A, "v2": COMMIT_B})
    assert model("org/repo:revision=v2").config()["resolved_revision"] == COMMIT_B
    pinned = "c" * 40
    assert model(f"org/repo:revision={pinned}").config()["resolved_revision"] == pinned
    # Neither cached nor reachable: said so, and the load fails as it would have.
    assert model("org/other").config()["resolved_revision"] == "unresolved"


def test_an_uncached_hub_id_asks_the_hub_once_in_a_session_that_calls(
        hub_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from huggingface_hub import HfApi, constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    asked: list[str] = []

    def model_info(self: Any, repo: str, **_: Any) -> Any:
        asked.append(repo)
        return SimpleNamespace(sha=COMMIT_A)

    monkeypatch.setattr(HfApi, "model_info", model_info)
    backend = model("org/new")
    assert backend.config()["resolved_revision"] == COMMIT_A
    backend.config()
    assert asked == ["org/new"]
    no_calls = ModelOptions(devices=("cpu",), calls=False)  # --collect-only, a dry run
    assert model("org/new", options=no_calls).config()["resolved_revision"] == "unresolved"
    assert asked == ["org/new"]


# ---------------------------------------------------------------- LoRA


def test_loras_change_the_pixels_with_their_scales(tiny: dict[str, Path],
                                                   loras: dict[str, Path]) -> None:
    base = f"{tiny['sd']}:steps=2"
    plain = pixels(model(base).generate(request=request()).image)
    with_a = model(f"{base},lora={loras['a']}@1.5")
    drawn = with_a.generate(request=request())
    assert not np.array_equal(pixels(drawn.image), plain)
    assert drawn.details["lora"] == [{"source": str(loras["a"]), "scale": 1.5}]
    config = with_a.config()["lora"]
    assert config[0]["scale"] == 1.5 and config[0]["revision"].startswith("local-")
    silent = model(f"{base},lora={loras['a']}@0").generate(request=request())
    assert np.abs(pixels(silent.image) - plain).max() <= 1  # scale 0: the base model
    both = model(f"{base},lora={loras['a']}@1.5+{loras['b'].parent}@1")
    assert len(both.config()["lora"]) == 2
    assert not np.array_equal(pixels(both.generate(request=request()).image), pixels(drawn.image))


def test_lora_specs_are_checked_at_start_up(tiny: dict[str, Path],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"lora='/no/such\.safetensors': no file or folder"):
        model(f"{tiny['sd']}:lora=/no/such.safetensors")
    with pytest.raises(ValueError, match=r"scale 'big' of org/lora is not a number"):
        model(f"{tiny['sd']}:lora=org/lora@big")
    _without(monkeypatch, "peft")
    with pytest.raises(ImportError, match=r"lora= needs peft: pip install peft"):
        model(f"{tiny['sd']}:lora=org/lora")


def test_swapped_lora_weights_change_the_key(tiny: dict[str, Path], tmp_path: Path) -> None:
    lora = tmp_path / "style.safetensors"
    lora.write_bytes(b"one")
    before = model(f"{tiny['sd']}:lora={lora}").config()["lora"]
    lora.write_bytes(b"other")
    os.utime(lora, ns=(1, 1))
    assert model(f"{tiny['sd']}:lora={lora}").config()["lora"] != before


def _without(monkeypatch: pytest.MonkeyPatch, package: str) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == package else real(name, *a))


# ---------------------------------------------------------------- quantization


def test_torchao_int8_quantizes_the_transformer(tiny: dict[str, Path]) -> None:
    spec = f"{tiny['flux']}:steps=2,quantization=torchao-int8"
    quantized = model(spec)
    drawn = quantized.generate(request=request())
    assert drawn.image.size == (SIZE, SIZE) and drawn.details["quantization"] == "torchao-int8"
    assert quantized.config()["quantization"] == "torchao-int8"
    assert quantized.config() != model(f"{tiny['flux']}:steps=2").config()
    loaded = next(iter(PIPELINES.values()))
    assert not isinstance(loaded, str)
    weight = loaded.pipe.transformer.transformer_blocks[0].attn.to_q.weight
    assert type(weight).__name__ != "Parameter"  # a torchao tensor subclass
    encoder = next(m for m in loaded.pipe.text_encoder.modules() if isinstance(m, nn.Linear))
    assert type(encoder.weight).__name__ == "Parameter"  # quantize= names the rest


def test_quantize_names_components_the_pipeline_has(tiny: dict[str, Path]) -> None:
    backend = model(f"{tiny['flux']}:steps=2,quantization=torchao-int8,quantize=unet")
    with pytest.raises(ModelError, match=r"quantize= names unet; the pipeline's components: "
                                         r".*transformer"):
        backend.generate(request=request())
    with pytest.raises(ValueError, match=r"quantize= names what quantization= quantizes"):
        model(f"{tiny['flux']}:quantize=transformer")


def test_bitsandbytes_is_refused_clearly(tiny: dict[str, Path],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _without(monkeypatch, "bitsandbytes")
    with pytest.raises(ImportError, match=r"quantization=bnb-4bit needs bitsandbytes: pip "
                                          r"install bitsandbytes"):
        model(f"{tiny['flux']}:quantization=bnb-4bit")
    monkeypatch.undo()
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: real("os") if name == "bitsandbytes" else real(name, *a))
    with pytest.raises(ModelError, match=r"quantization=bnb-8bit runs bitsandbytes kernels, "
                                         r"which need a CUDA device; this process uses cpu"):
        model(f"{tiny['flux']}:quantization=bnb-8bit").generate(request=request())
    with pytest.raises(ValueError, match=r"quantization='int3': use one of bnb-4bit, bnb-8bit, "
                                         r"torchao-int8"):
        model(f"{tiny['flux']}:quantization=int3")


# ---------------------------------------------------------------- attention


def test_attention_backend_native(tiny: dict[str, Path]) -> None:
    from diffusers.models.attention_dispatch import _AttentionBackendRegistry

    active = _AttentionBackendRegistry._active_backend
    base = f"{tiny['flux']}:steps=2"
    plain = pixels(model(base).generate(request=request()).image)
    native = model(f"{base},attention=native")
    drawn = native.generate(request=request())
    assert drawn.details["attention"] == "native" and native.config()["attention"] == "native"
    assert np.abs(pixels(drawn.image) - plain).max() <= 2
    assert _AttentionBackendRegistry._active_backend == active  # other pipelines keep theirs


def test_attention_backends_are_checked(tiny: dict[str, Path]) -> None:
    with pytest.raises(ValueError, match=r"attention='fast' is not an attention backend of "
                                         r"diffusers .*; accepted: .*native"):
        model(f"{tiny['flux']}:attention=fast")
    if importlib.util.find_spec("flash_attn") is None:
        with pytest.raises(ImportError, match=r"attention=flash: .*flash-attn"):
            model(f"{tiny['flux']}:attention=flash")
    with pytest.raises(ModelError, match=r"StableDiffusionPipeline's attention processors do "
                                         r"not dispatch"):
        model(f"{tiny['sd']}:steps=2,attention=native").generate(request=request())


# ---------------------------------------------------------------- VAE, device map, compile


def test_vae_tiling_and_slicing_are_recorded(tiny: dict[str, Path]) -> None:
    base = f"{tiny['sd']}:steps=2"
    tiled = model(f"{base},vae_tiling=true,vae_slicing=true")
    details = tiled.generate(request=request()).details
    assert details["vae_tiling"] is True and details["vae_slicing"] is True
    loaded = next(iter(PIPELINES.values()))
    assert not isinstance(loaded, str) and loaded.pipe.vae.use_tiling
    assert tiled.config()["vae_tiling"] is True  # tiles change pixels: in the key
    sliced = model(f"{base},vae_slicing=true")
    assert sliced.config() == model(base).config()  # slicing only rounds: record only


def test_device_map_needs_cuda(tiny: dict[str, Path]) -> None:
    with pytest.raises(ModelError, match=r"device_map=balanced spreads the pipeline over CUDA "
                                         r"GPUs; this process uses cpu"):
        model(f"{tiny['sd']}:device_map=balanced").generate(request=request())
    with pytest.raises(ValueError, match=r"drop cpu_offload="):
        model(f"{tiny['sd']}:device_map=balanced,cpu_offload=model")
    assert model(f"{tiny['sd']}:device_map=balanced").config() == model(str(tiny["sd"])).config()


@pytest.mark.slow
def test_compile_on_the_cpu_draws_what_eager_draws(tiny: dict[str, Path]) -> None:
    base = f"{tiny['sd']}:steps=2"
    eager = pixels(model(base).generate(request=request()).image)
    compiled = model(f"{base},compile=true")
    drawn = compiled.generate(request=request())
    assert drawn.details["compile"] == "unet:regional"
    assert compiled.config() == model(base).config()  # compiling only rounds differently
    assert np.abs(pixels(drawn.image) - eager).max() <= 2
    with pytest.raises(ValueError, match=r"compile='maybe': give true, false, full or regional"):
        model(f"{base},compile=maybe")
