"""The diffusers backend on a CUDA device (opt-in: ``pytest --run-gpu -m gpu``).

Tiny random pipelines again (no weights reach the machine): the point is device placement,
half precision, the per-worker device under xdist, and that the GPU draws the same sheets
as the CPU where it should.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from pytest_imagetime.models.base import GenerationRequest, ModelOptions
from pytest_imagetime.models.diffusers_backend import DiffusersModel, forget_pipelines
from tests.builders import case_dict, make_case, write_case_file
from tests.tiny_pipelines import save_pipeline

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def tiny_sd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not torch.cuda.is_available():
        pytest.fail("--run-gpu was given but torch sees no CUDA device")
    return save_pipeline("sd", tmp_path_factory.mktemp("gpu") / "sd")


def _draw(spec: str, device: str) -> np.ndarray:
    forget_pipelines()
    model = DiffusersModel(spec, name="diffusers", options=ModelOptions(devices=(device,)))
    request = GenerationRequest(make_case(), "prompt-only", 64, 7)
    generated = model.generate(request=request)
    assert generated.details["device"] == device
    return np.asarray(generated.image, dtype=np.int16)


def test_float32_on_the_gpu_draws_what_the_cpu_draws(tiny_sd: Path) -> None:
    spec = f"{tiny_sd}:steps=2,dtype=float32"
    difference = np.abs(_draw(spec, "cuda:0") - _draw(spec, "cpu"))
    assert difference.max() <= 2  # kernels differ in the last bits, not in the picture


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_runs_on_the_gpu(tiny_sd: Path, dtype: str) -> None:
    image = _draw(f"{tiny_sd}:steps=2,dtype={dtype}", "cuda:0")
    assert image.shape == (64, 64, 3)


def test_two_workers_share_one_gpu_with_auto_devices(pytester: pytest.Pytester,
                                                     tiny_sd: Path) -> None:
    write_case_file(pytester.path / "k.yaml", [case_dict(f"kitchen-pour-water-{n}", variant=n)
                                               for n in (1, 2)])
    result = pytester.runpytest_subprocess(
        "k.yaml", f"--imagetime-model=diffusers:{tiny_sd}:steps=2", "--imagetime-size=64",
        "--imagetime-judge=pixel", "--imagetime-devices=auto", "-n", "2")
    outcomes = result.parseoutcomes()
    assert "errors" not in outcomes
    records = [json.loads(p.read_text())
               for p in (pytester.path / "reports").rglob("images/*.json")]
    assert sorted(r["details"]["device"] for r in records) == ["cuda:0", "cuda:0"]


def test_auto_draws_in_a_child_process_what_this_process_draws(tiny_sd: Path) -> None:
    from pytest_imagetime.backends.registry import MODELS
    from pytest_imagetime.models.own_process import OwnProcessModel, factory_of

    spec = f"diffusers:{tiny_sd}:steps=2,dtype=float32"
    options = ModelOptions(devices=("cuda:0",))
    forget_pipelines()
    local = MODELS.create(spec, options=options)
    model = OwnProcessModel(factory_of(MODELS, spec, options), local, "auto")
    assert model.in_own_process
    request = GenerationRequest(make_case(), "prompt-only", 64, 7)
    try:
        drawn = model.generate(request=request)
        pid = model.drawing_pid
        batch = model.generate_batch(requests=[request, request])
    finally:
        model.close()
    assert pid is not None and pid != os.getpid()
    assert drawn.details["device"] == "cuda:0"
    here = np.asarray(local.generate(request=request).image, dtype=np.int16)
    for image in (drawn.image, *(g.image for g in batch)):
        assert np.abs(np.asarray(image, dtype=np.int16) - here).max() <= 2


@pytest.fixture(scope="module")
def tiny_flux(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not torch.cuda.is_available():
        pytest.fail("--run-gpu was given but torch sees no CUDA device")
    return save_pipeline("flux", tmp_path_factory.mktemp("gpu") / "flux")


@pytest.mark.parametrize("knob", ["quantization=bnb-4bit", "quantization=torchao-int8",
                                  "compile=true", "attention=native", "vae_tiling=true"])
def test_each_knob_draws_on_the_gpu(tiny_flux: Path, knob: str) -> None:
    """bitsandbytes needs CUDA and the package (a missing one fails here, not skipped)."""
    plain = _draw(f"{tiny_flux}:steps=2,dtype=bfloat16", "cuda:0")
    turned = _draw(f"{tiny_flux}:steps=2,dtype=bfloat16,{knob}", "cuda:0")
    assert turned.shape == plain.shape == (64, 64, 3)
