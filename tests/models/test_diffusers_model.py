"""The diffusers backend on tiny random pipelines: loading, seeding, batching, failures."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from diffusers import DiffusionPipeline, StableDiffusionPipeline
from diffusers.pipelines.stable_diffusion.pipeline_output import (
    StableDiffusionPipelineOutput,
)
from PIL import Image

from pytest_imagetime.cases.model import Case
from pytest_imagetime.models import diffusers_backend
from pytest_imagetime.models.base import GenerationRequest, ModelError, ModelOptions
from pytest_imagetime.models.diffusers_backend import (
    PIPELINES,
    DiffusersModel,
    Loaded,
    forget_pipelines,
)
from tests.builders import case_dict, make_case, write_case_file
from tests.tiny_pipelines import save_pipeline

CPU = ModelOptions(devices=("cpu",))
SIZE = 64

Pipelines = dict[str, Path]


@pytest.fixture(scope="session")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Pipelines:
    """Each tiny pipeline saved once per session, as a folder from_pretrained can read."""
    root = tmp_path_factory.mktemp("tiny-pipelines")
    return {kind: save_pipeline(kind, root / kind)
            for kind in ("sd", "sdxl", "flux", "flux-kontext")}


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


def request(case: Case | None = None, seed: int = 1, size: int = SIZE,
            scaffold: Image.Image | None = None) -> GenerationRequest:
    return GenerationRequest(case=case or make_case(), setting="scaffold" if scaffold else
                             "prompt-only", size=size, seed=seed, scaffold=scaffold)


def pixels(image: Image.Image) -> np.ndarray[Any, Any]:
    return np.asarray(image, dtype=np.int16)


# ---------------------------------------------------------------- generation


@pytest.mark.parametrize(("kind", "pipeline"), [("sd", "StableDiffusionPipeline"),
                                                ("sdxl", "StableDiffusionXLPipeline"),
                                                ("flux", "FluxPipeline")])
def test_generates_a_square_image_and_records_the_run(tiny: Pipelines, kind: str,
                                                      pipeline: str) -> None:
    generated = model(f"{tiny[kind]}:steps=2").generate(request=request())
    assert generated.image.mode == "RGB" and generated.image.size == (SIZE, SIZE)
    details = generated.details
    assert details["pipeline"] == pipeline and details["device"] == "cpu"
    assert details["dtype"] == "float32" and details["steps"] == 2 and details["size"] == SIZE
    assert details["revision"].startswith("local-") and details["seconds"] >= 0


def test_same_seed_same_pixels_across_models_and_reloads(tiny: Pipelines) -> None:
    spec = f"{tiny['sd']}:steps=2"
    first = pixels(model(spec).generate(request=request(seed=7)).image)
    again = pixels(model(spec).generate(request=request(seed=7)).image)
    forget_pipelines()
    reloaded = pixels(model(spec).generate(request=request(seed=7)).image)
    other_seed = pixels(model(spec).generate(request=request(seed=8)).image)
    assert np.array_equal(first, again) and np.array_equal(first, reloaded)
    assert not np.array_equal(first, other_seed)


def test_name_is_the_spec_the_user_wrote(tiny: Pipelines) -> None:
    assert model("steps=20", name="flux-dev").name == "flux-dev:steps=20"
    assert model("", name="sdxl").name == "sdxl"
    assert model(f"{tiny['sd']}:steps=2").name == f"diffusers:{tiny['sd']}:steps=2"


# ---------------------------------------------------------------- config


def test_config_changes_with_what_changes_pixels_only(tiny: Pipelines) -> None:
    path = tiny["sd"]
    base = model(f"{path}:steps=2").config()
    assert model(f"{path}:steps=3").config() != base
    assert model(f"{path}:steps=2,guidance=2").config() != base
    assert model(f"{path}:steps=2", options=ModelOptions(devices=("cuda:1",))).config() == base
    assert model(f"{path}:steps=2,cpu_offload=model").config() == base
    assert not PIPELINES  # config() loads nothing


def test_only_a_cpu_device_keeps_the_harness_off_a_thread_beside_it(tiny: Pipelines) -> None:
    # On the CPU torch uses every core: sheets are then stored between drawings.
    assert model(str(tiny["sd"])).cpu_bound
    assert not model(str(tiny["sd"]), options=ModelOptions(devices=("cuda:1",))).cpu_bound
    assert not PIPELINES  # asking loads nothing


def test_preset_config_carries_the_published_settings() -> None:
    config = model("steps=20", name="flux-dev").config()
    assert config["source"] == "black-forest-labs/FLUX.1-dev"
    assert config["pipeline"] == "FluxPipeline" and config["dtype"] == "bfloat16"
    assert config["steps"] == 20 and config["guidance"] == 3.5


# ---------------------------------------------------------------- spec errors


@pytest.mark.parametrize(("overrides", "message"), [
    ("stepz=2", r"unknown override 'stepz'; accepted: .*steps"),
    ("dtype=float8", r"dtype='float8': use one of auto, float32, float16, bfloat16"),
    ("size=1000", r"size='1000': give a multiple of 16"),
    ("size=large", r"size='large': give a multiple of 16"),
    ("scheduler=NoSuchScheduler", r"scheduler='NoSuchScheduler' is not a diffusers scheduler"
                                  r" class; e\.g\. EulerDiscreteScheduler"),
    ("cpu_offload=always", r"cpu_offload='always': use one of none, model, sequential"),
])
def test_bad_overrides_name_the_key(tiny: Pipelines, overrides: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        model(f"{tiny['sd']}:{overrides}")


def test_generic_backend_needs_weights() -> None:
    with pytest.raises(ValueError, match="needs weights: --imagetime-model=diffusers:ORG/REPO"):
        model("steps=2")


def test_missing_libraries_give_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "diffusers", None)
    with pytest.raises(ImportError, match=r"needs diffusers: pip install "
                                          r"'pytest-imagetime\[diffusers\]'"):
        model("org/repo")


def test_request_size_must_be_a_multiple_of_16(tiny: Pipelines) -> None:
    with pytest.raises(ModelError, match="size 60 is not a multiple of 16"):
        model(f"{tiny['sd']}:steps=2").generate(request=request(size=60))
    assert not PIPELINES


def test_override_the_pipeline_does_not_take(tiny: Pipelines) -> None:
    with pytest.raises(ModelError, match="StableDiffusionPipeline takes no true_cfg_scale; "
                                         "drop true_cfg="):
        model(f"{tiny['sd']}:steps=2,true_cfg=4").generate(request=request())


# ---------------------------------------------------------------- loading


def test_preset_class_and_defaults_over_local_weights(tiny: Pipelines) -> None:
    schnell = model(f"{tiny['flux']}:steps=2,dtype=float32", name="flux-schnell")
    details = schnell.generate(request=request()).details
    assert details["pipeline"] == "FluxPipeline" and details["guidance"] == 0.0
    assert schnell.config()["source"] == str(tiny["flux"])


def test_preset_whose_class_does_not_match_the_weights(tiny: Pipelines) -> None:
    with pytest.raises(ModelError, match="the folder holds a StableDiffusionPipeline, this "
                                         "preset needs a FluxPipeline"):
        model(f"{tiny['sd']}:steps=2", name="flux-dev").generate(request=request())


def test_weights_load_once_per_process_and_are_shared(tiny: Pipelines) -> None:
    model(f"{tiny['sd']}:steps=2").generate(request=request())
    model(f"{tiny['sd']}:steps=3,guidance=2").generate(request=request(seed=2))
    assert len(PIPELINES) == 1
    loaded = next(iter(PIPELINES.values()))
    model(f"{tiny['sd']}:steps=2").generate(request=request())
    assert next(iter(PIPELINES.values())) is loaded


def test_scheduler_override_swaps_the_scheduler(tiny: Pipelines) -> None:
    default = model(f"{tiny['sd']}:steps=2").generate(request=request())
    euler = model(f"{tiny['sd']}:steps=2,scheduler=EulerDiscreteScheduler")
    details = euler.generate(request=request()).details
    assert default.details["scheduler"] == "DDIMScheduler"
    assert details["scheduler"] == "EulerDiscreteScheduler"
    assert len(PIPELINES) == 2  # the default pipeline keeps its scheduler


def test_missing_local_folder_names_the_path_and_the_fix(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelError, match=rf"no directory {missing}: .*hf download"):
        model(str(missing)).generate(request=request())


def test_load_failure_is_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def offline(source: str, **options: Any) -> Any:
        calls.append(source)
        raise OSError("not in the cache and no network")

    monkeypatch.setattr(DiffusionPipeline, "from_pretrained", staticmethod(offline))
    backend = model("org/repo")
    messages = []
    for seed in (1, 2):
        with pytest.raises(ModelError) as failure:
            backend.generate(request=request(seed=seed))
        messages.append(str(failure.value))
    assert calls == ["org/repo"]
    assert messages[0] == messages[1]
    assert "OSError: not in the cache and no network" in messages[0]
    assert "download them first with `hf download org/repo`" in messages[0]


def test_cpu_offload_needs_a_gpu(tiny: Pipelines) -> None:
    with pytest.raises(ModelError, match="cpu_offload=model needs a CUDA device; this process "
                                         "uses cpu"):
        model(f"{tiny['sd']}:steps=2,cpu_offload=model").generate(request=request())


# ---------------------------------------------------------------- batching


def test_batch_matches_one_at_a_time(tiny: Pipelines) -> None:
    backend = model(f"{tiny['flux']}:steps=2")
    requests = [request(make_case("case-a"), seed=3), request(make_case("case-b"), seed=4)]
    batch = backend.generate_batch(requests=requests)
    singles = [backend.generate(request=r) for r in requests]
    assert [g.details["batch"] for g in batch] == [2, 2]
    for together, alone in zip(batch, singles, strict=True):
        assert np.allclose(pixels(together.image), pixels(alone.image), atol=2)
    assert not np.array_equal(pixels(batch[0].image), pixels(batch[1].image))


def test_batch_of_different_sizes_runs_one_call_each(tiny: Pipelines) -> None:
    backend = model(f"{tiny['sd']}:steps=2")
    batch = backend.generate_batch(requests=[request(size=64), request(size=48)])
    assert [g.image.size for g in batch] == [(64, 64), (48, 48)]
    assert [g.details["batch"] for g in batch] == [1, 1]


# ---------------------------------------------------------------- scaffolds


def test_edit_preset_completes_a_scaffold(tiny: Pipelines) -> None:
    kontext = model(f"{tiny['flux-kontext']}:steps=2,dtype=float32", name="flux-kontext")
    assert kontext.accepts_reference
    red = kontext.generate(request=request(scaffold=Image.new("RGB", (SIZE, SIZE), "red")))
    blue = kontext.generate(request=request(scaffold=Image.new("RGB", (SIZE, SIZE), "blue")))
    assert red.image.size == (SIZE, SIZE)
    assert red.details["pipeline"] == "FluxKontextPipeline"
    assert not np.array_equal(pixels(red.image), pixels(blue.image))


def test_text_to_image_backend_refuses_a_scaffold(tiny: Pipelines) -> None:
    backend = model(f"{tiny['sd']}:steps=2")
    assert not backend.accepts_reference
    assert model(f"{tiny['sd']}:edit=true").accepts_reference
    with pytest.raises(ModelError, match=r"cannot complete a scaffold; edit-capable presets: "
                                         r".*flux-kontext.*qwen-image-edit"):
        backend.generate(request=request(scaffold=Image.new("RGB", (SIZE, SIZE))))
    assert not PIPELINES


def test_edit_only_preset_needs_a_scaffold() -> None:
    with pytest.raises(ModelError, match="cannot render from text alone: run it in the "
                                         "scaffold setting"):
        model("", name="qwen-image-edit").generate(request=request())
    assert not PIPELINES


# ---------------------------------------------------------------- failures


def _replace_call(monkeypatch: pytest.MonkeyPatch, result: Any) -> None:
    """StableDiffusionPipeline calls return (or raise) ``result`` for the test's duration."""
    @functools.wraps(StableDiffusionPipeline.__call__)  # keeps the signature the backend reads
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(result, BaseException):
            raise result
        return result

    monkeypatch.setattr(StableDiffusionPipeline, "__call__", call)


def test_out_of_memory_becomes_a_model_error(tiny: Pipelines,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    emptied: list[bool] = []
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(True))
    _replace_call(monkeypatch, torch.cuda.OutOfMemoryError("CUDA out of memory"))
    with pytest.raises(ModelError, match=r"out of GPU memory rendering 64x64 on cpu: CUDA out "
                                         r"of memory; try cpu_offload=model, a smaller size, "
                                         r"or fewer workers per GPU"):
        model(f"{tiny['sd']}:steps=2").generate(request=request())
    assert emptied == [True]


@pytest.mark.parametrize(("flagged", "message"), [
    (True, "safety checker flagged the image and blacked it out"),
    (False, "entirely black; .*NaNs in a half-precision VAE"),
])
def test_black_images_are_errors_with_their_cause(tiny: Pipelines,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  flagged: bool, message: str) -> None:
    black = Image.new("RGB", (SIZE, SIZE))
    _replace_call(monkeypatch, StableDiffusionPipelineOutput(images=[black],
                                                             nsfw_content_detected=[flagged]))
    with pytest.raises(ModelError, match=message):
        model(f"{tiny['sd']}:steps=2").generate(request=request())


def test_other_pipeline_errors_keep_type_and_message(tiny: Pipelines,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _replace_call(monkeypatch, ValueError("height must be divisible by 8"))
    with pytest.raises(ModelError, match="StableDiffusionPipeline failed: ValueError: height "
                                         "must be divisible by 8"):
        model(f"{tiny['sd']}:steps=2").generate(request=request())


# ---------------------------------------------------------------- guider pipelines


class _Guider:
    def __init__(self, guidance_scale: float) -> None:
        self.guidance_scale = guidance_scale

    def new(self, guidance_scale: float) -> _Guider:
        return _Guider(guidance_scale)


class _GuiderPipeline:
    """Takes no guidance_scale: guidance lives in its guider (as in HunyuanImage)."""

    def __init__(self) -> None:
        self.guider = _Guider(3.5)

    def __call__(self, prompt: list[str], num_inference_steps: int = 50) -> None:
        pass


def test_guidance_goes_to_the_guider_for_one_call_only() -> None:
    pipe = _GuiderPipeline()
    loaded = Loaded(pipe=pipe, revision="r", guider=pipe.guider)
    with diffusers_backend._guidance(loaded, 6.0):
        assert pipe.guider.guidance_scale == 6.0
    assert pipe.guider is loaded.guider


# ---------------------------------------------------------------- through the plugin


def test_plugin_runs_a_case_with_a_local_pipeline(pytester: pytest.Pytester,
                                                  tiny: Pipelines) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [case_dict()])
    result = pytester.runpytest("kitchen.yaml", f"--imagetime-model=diffusers:{tiny['sd']}:steps=2",
                                f"--imagetime-size={SIZE}", "--imagetime-judge=pixel")
    outcomes = result.parseoutcomes()
    assert "errors" not in outcomes and outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1
    records = list((pytester.path / "reports").rglob("images/*.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert record["details"]["pipeline"] == "StableDiffusionPipeline"
    assert record["model_config"]["steps"] == 2 and record["width"] == SIZE
    assert records[0].with_suffix(".png").is_file()


# ---------------------------------------------------------------- prompt tokens


def _tokens(generated: Any) -> dict[str, dict[str, Any]]:
    return {entry["tokenizer"]: entry for entry in generated.details["prompt_tokens"]}


@pytest.mark.parametrize(("kind", "components"), [("sdxl", {"tokenizer", "tokenizer_2"}),
                                                  ("flux", {"tokenizer", "tokenizer_2"})])
def test_each_text_encoder_counts_the_prompt_against_its_limit(tiny: Pipelines, kind: str,
                                                                components: set[str]) -> None:
    short = GenerationRequest(case=make_case(), setting="prompt-only", size=SIZE, seed=1,
                              prompt="a cat")
    counts = _tokens(model(str(tiny[kind])).generate(request=short))
    assert set(counts) == components
    assert all(not c["truncated"] and 0 < c["tokens"] < c["limit"] for c in counts.values())
    assert counts["tokenizer"]["limit"] == 77 and counts["tokenizer"]["class"] == "CLIPTokenizer"


def test_a_long_prompt_is_recorded_as_cut_where_an_encoder_cuts_it(tiny: Pipelines) -> None:
    # The tiny T5 tokenizer takes ten tokens for "a cat on a mat": 400 pass the 256 of a
    # schnell-like call and stay within the 512 of a dev-like one.
    long = GenerationRequest(case=make_case(), setting="prompt-only", size=SIZE, seed=1,
                             prompt="a cat on a mat " * 40)
    schnell_like = model(f"{tiny['flux']}:max_sequence_length=256")
    dev_like = model(f"{tiny['flux']}:max_sequence_length=512")
    cut, whole = (_tokens(m.generate(request=long)) for m in (schnell_like, dev_like))
    assert cut["tokenizer"]["truncated"] and cut["tokenizer"]["tokens"] > 77
    assert cut["tokenizer_2"] == {**cut["tokenizer_2"], "limit": 256, "truncated": True}
    assert whole["tokenizer_2"]["limit"] == 512 and not whole["tokenizer_2"]["truncated"]
    assert whole["tokenizer_2"]["tokens"] == cut["tokenizer_2"]["tokens"]


def test_batched_requests_each_record_their_own_prompt(tiny: Pipelines) -> None:
    prompts = ["a cat", "a cat on a mat " * 40]
    requests = [GenerationRequest(case=make_case(), setting="prompt-only", size=SIZE, seed=1,
                                  prompt=p) for p in prompts]
    first, second = model(str(tiny["flux"])).generate_batch(requests=requests)
    assert not _tokens(first)["tokenizer"]["truncated"]
    assert _tokens(second)["tokenizer"]["truncated"]
