"""The diffusers backend on a GPU, in one short run: the plugin against a bare loop over the
same tiny pipeline and prompts, plain, batched, compiled and quantized.

A tiny, randomly initialised pipeline (tests/tiny_pipelines.py: no weights are downloaded)
draws the prompts of the first N cases. Each row times a bare loop (``from_pretrained``, the
same knobs applied by hand, then ``pipe(prompt, generator=...)``) and the plugin with the
matching spec (``diffusers:PATH:steps=2,compile=true`` ...), both from their first image to
their last, so start-up, loading and compiling are left out of both. The batch row compares
the plugin at ``--imagetime-batch-size=B`` with the plugin at 1.

    python benchmarks/gpu_check.py [--device cuda] [--n 120] [--repeat 2] [--kind flux]
                                   [--batch 8] [--quantization torchao-int8]
    python benchmarks/gpu_check.py --device cpu --n 8 --repeat 1     # a smoke check
    python benchmarks/gpu_check.py --rows quantized --quantization bnb-4bit   # one row

Target: plugin / bare >= 0.98 on a GPU for every row. Under 8 minutes on an H100 with the
defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from generation import case_prompts, timed_pytest

# The plugin's own steps for each knob, by hand: a regional compile of the denoiser, the
# quantization of the denoiser alone, CPU generators.
BARE_LOOP = """\
import json, sys, time
import torch
import diffusers

path, device, dtype, steps, size, prompts_file, compile_, quantization = sys.argv[1:9]
prompts = json.loads(open(prompts_file).read())
options = {"torch_dtype": getattr(torch, dtype)}
if quantization != "none":
    from pytest_imagetime.models.diffusers_knobs import Knobs, load_options
    libraries = {k: v[0] for k, v in diffusers.DiffusionPipeline.load_config(path).items()
                 if isinstance(v, list)}
    options.update(load_options(Knobs(quantization=quantization), getattr(torch, dtype),
                                libraries))
pipe = diffusers.DiffusionPipeline.from_pretrained(path, **options).to(device)
pipe.set_progress_bar_config(disable=True)
denoiser = getattr(pipe, "transformer", None) or pipe.unet
if compile_ == "true":
    denoiser.compile_repeated_blocks()


def draw(seed, prompt):
    return pipe([prompt], num_inference_steps=int(steps), height=int(size), width=int(size),
                generator=[torch.Generator("cpu").manual_seed(seed)]).images[0]


draw(0, prompts[0][1])  # warm-up (and compiling), as the plugin's first item
start = time.perf_counter()
for seed, prompt in prompts:
    image = draw(seed, prompt)
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def bare(work: Path, pipeline: Path, args: argparse.Namespace, dtype: str,
         prompts: Sequence[tuple[int, str]], compile_: bool, quantization: str) -> float:
    """Images per second of the bare loop."""
    script = work / "bare_knobs.py"
    script.write_text(BARE_LOOP)
    prompts_file = work / "prompts.json"
    prompts_file.write_text(json.dumps(list(prompts)))
    out = subprocess.run([sys.executable, str(script), str(pipeline), args.device, dtype,
                          str(args.steps), str(args.size), str(prompts_file),
                          "true" if compile_ else "false", quantization],
                         capture_output=True, text=True, check=False)
    if out.returncode:
        sys.exit(f"the bare loop failed:\n{out.stderr[-3000:]}")
    return len(prompts) / float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def plugin(work: Path, pipeline: Path, args: argparse.Namespace, dtype: str,
           files: Sequence[Path], extra: str, batch: int) -> float:
    """Images per second through the plugin, from the first item's end to the last's."""
    spec = f"diffusers:{pipeline}:steps={args.steps},dtype={dtype}{extra}"
    stamps, _ = timed_pytest(work, [
        *map(str, files), f"--imagetime-model={spec}", f"--imagetime-size={args.size}",
        "--imagetime-judge=pixel", f"--imagetime-devices={args.device}",
        f"--imagetime-batch-size={batch}"])
    return float((int(stamps["items"]) - 1) / (stamps["last"] - stamps["first"]))


def main() -> None:
    parser = argparse.ArgumentParser(description="the diffusers backend on a GPU")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--n", type=int, default=120, help="at least this many cases")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--kind", default="flux", help="tiny pipeline: sd, sdxl, flux")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--quantization", default="torchao-int8",
                        help="the quantized row's quantization= (bnb-4bit needs CUDA)")
    parser.add_argument("--rows", default="plain,compile,quantized,batch",
                        help="which rows to time, e.g. quantized for that row alone")
    args = parser.parse_args()
    dtype = "float32" if args.device == "cpu" else "bfloat16"

    import torch
    from tests.tiny_pipelines import save_pipeline

    files, prompts = case_prompts(args.n)
    wanted = set(args.rows.split(","))
    rows = tuple(row for key, row in (
        ("plain", ("plain", "", False, "none")),
        ("compile", ("compile=true", ",compile=true", True, "none")),
        ("quantized", (f"quantization={args.quantization}",
                       f",quantization={args.quantization}", False, args.quantization)))
        if key in wanted)
    results: dict[str, list[tuple[float, float]]] = {label: [] for label, *_ in rows}
    batched: list[float] = []
    with tempfile.TemporaryDirectory(prefix="imagetime-gpu-check-") as tmp:
        work = Path(tmp)
        pipeline = save_pipeline(args.kind, work / "pipeline")
        for _ in range(args.repeat):
            for label, extra, compile_, quantization in rows:
                results[label].append((
                    bare(work, pipeline, args, dtype, prompts, compile_, quantization),
                    plugin(work, pipeline, args, dtype, files, extra, 1)))
                print(f"{label}: bare {results[label][-1][0]:.2f}, plugin "
                      f"{results[label][-1][1]:.2f} images/s", flush=True)
            if "batch" in wanted:
                batched.append(plugin(work, pipeline, args, dtype, files, "", args.batch))
    device = (torch.cuda.get_device_name(0) if args.device.startswith("cuda")
              else platform.processor() or "cpu")
    print(f"\nmachine: {os.cpu_count()} cores, {device}, torch {torch.__version__}, "
          f"diffusers {version('diffusers')}")
    print(f"tiny {args.kind} pipeline, {args.steps} steps, {args.size} px, {len(prompts)} "
          f"prompts, {args.device}, {dtype}; images/s, median of {args.repeat}\n")
    target = 0.98 if args.device.startswith("cuda") else 0.95
    print(f"{'row':<28} {'bare':>8} {'plugin':>8} {'ratio':>7}")
    for label, *_ in rows:
        bare_rate = statistics.median(b for b, _ in results[label])
        plugin_rate = statistics.median(p for _, p in results[label])
        ratio = plugin_rate / bare_rate
        verdict = "PASS" if ratio >= target else "MISS"
        print(f"{label:<28} {bare_rate:8.2f} {plugin_rate:8.2f} {ratio:7.3f} {verdict}")
    if batched and results.get("plain"):
        plain = statistics.median(p for _, p in results["plain"])
        print(f"{f'plugin, batch {args.batch}':<28} {'':>8} {statistics.median(batched):8.2f}"
              f" {statistics.median(batched) / plain:6.2f}x over batch 1")
    print(f"\ntarget: plugin / bare >= {target}")


if __name__ == "__main__":
    main()
