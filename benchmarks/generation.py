"""Images per second through the plugin against a bare loop over the same pipeline.

A tiny, randomly initialised diffusers pipeline (the same builders as the tests: no weights
are downloaded) draws the prompts of the first N cases, once in a bare loop
(``from_pretrained`` then ``pipe(prompt, generator=...)``) and once through pytest with
``--imagetime-model=diffusers:PATH``. Both are timed from their first image to their last,
start-up left out (pytest's collection, the import of torch, the loading of the pipeline), so
the ratio is what the plugin adds to each image: storing it, its record, the pixel facts and
the pixel judge. Then the plugin again with ``--imagetime-batch-size=B``. Last, the pixel
facts and the PNG encoding of the plugin's own sheets are timed alone, in this process: the
part of what the plugin adds to an image that every new sheet needs, whatever the harness.

    python benchmarks/generation.py [--n 120] [--repeat 3] [--kind sd] [--steps 2]
                                    [--size 64] [--device cpu|cuda] [--batch 8]

Each repetition also runs the plugin with the other ``--imagetime-model-process`` choice
(the default, auto, draws in a child process on a GPU and in the pytest process on the CPU).

Targets: plugin within 5% of the bare loop on the CPU, 2% on a GPU.
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
import time
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Times the items after the first (whose setup loads torch and the pipeline, as the bare
# loop's warm-up call does): from the first item's end to the last item's end.
TIMING_PLUGIN = """\
import json, os, time

_times = {"items": 0}


def pytest_runtest_logfinish(nodeid, location):
    now = time.perf_counter()
    _times.setdefault("first", now)
    _times["last"] = now
    _times["items"] += 1


def pytest_sessionfinish(session):
    if _times:
        with open(os.environ["IMAGETIME_BENCH_TIMES"], "w") as out:
            json.dump(_times, out)
"""

BARE_LOOP = """\
import json, sys, time
import torch
from diffusers import DiffusionPipeline

path, device, dtype, steps, size, prompts_file = sys.argv[1:7]
prompts = json.loads(open(prompts_file).read())
# The plugin's dtype, and its CPU generators (the same noise on any device).
pipe = DiffusionPipeline.from_pretrained(path, torch_dtype=getattr(torch, dtype)).to(device)
pipe.set_progress_bar_config(disable=True)


def draw(seed, prompt):
    return pipe([prompt], num_inference_steps=int(steps), height=int(size), width=int(size),
                generator=[torch.Generator("cpu").manual_seed(seed)]).images[0]


draw(0, prompts[0][1])  # warm-up, as the plugin's first item
start = time.perf_counter()
for seed, prompt in prompts:
    image = draw(seed, prompt)
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def case_prompts(n: int) -> tuple[list[Path], list[tuple[int, str]]]:
    """The first n packaged cases (whole files), with each case's seed and prompt."""
    from pytest_imagetime.cases.loading import builtin_cases_dir, load_case_file
    from pytest_imagetime.engine.runner import case_seed

    files: list[Path] = []
    prompts: list[tuple[int, str]] = []
    for path in sorted(builtin_cases_dir().glob("*.yaml")):
        if len(prompts) >= n:
            break
        files.append(path)
        prompts += [(case_seed(0, case.id), case.prompt) for case in load_case_file(path)]
    return files, prompts


def bare(work: Path, pipeline: Path, device: str, dtype: str, steps: int, size: int,
         prompts: Sequence[tuple[int, str]]) -> float:
    script = work / "bare.py"
    script.write_text(BARE_LOOP)
    prompts_file = work / "prompts.json"
    prompts_file.write_text(json.dumps(list(prompts)))
    out = subprocess.run([sys.executable, str(script), str(pipeline), device, dtype,
                          str(steps), str(size), str(prompts_file)], capture_output=True, text=True,
                         check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def through_plugin(work: Path, pipeline: Path, device: str, dtype: str, steps: int,
                   size: int, files: Sequence[Path], batch: int,
                   process: str = "auto") -> tuple[float, int, Path]:
    """Seconds from the first item's end to the last's, the items in them, and the folder
    the run wrote."""
    stamps, run = timed_pytest(work, [
        *map(str, files), f"--imagetime-model=diffusers:{pipeline}:steps={steps},dtype={dtype}",
        f"--imagetime-size={size}", "--imagetime-judge=pixel", f"--imagetime-devices={device}",
        f"--imagetime-batch-size={batch}", f"--imagetime-model-process={process}"])
    return stamps["last"] - stamps["first"], int(stamps["items"]) - 1, run


def sheet_costs(run: Path, limit: int = 40) -> tuple[float, float, int]:
    """Milliseconds a sheet of ``run`` takes to measure (its pixel facts) and to encode as
    PNG, in this process: medians over up to ``limit`` of its stored sheets, each the best
    of three (what the plugin does to every new sheet, apart from pytest and the records)."""
    from PIL import Image

    from pytest_imagetime.sheet.metrics import analyze
    from pytest_imagetime.store.sheets import encode_png

    measure: list[float] = []
    encode: list[float] = []
    paths = sorted(run.rglob("images/*.png"))[:limit]
    for path in paths:
        with Image.open(path) as opened:
            image = opened.convert("RGB")
        for work, times in ((analyze, measure), (encode_png, encode)):
            best = min(_seconds(work, image) for _ in range(3))
            times.append(best * 1000)
    return statistics.median(measure), statistics.median(encode), len(paths)


def _seconds(work: Callable[[Any], object], image: Any) -> float:
    started = time.perf_counter()
    work(image)
    return time.perf_counter() - started


def timed_pytest(work: Path, args: Sequence[str], env: Mapping[str, str] | None = None,
                 path: Sequence[Path] = ()) -> tuple[dict[str, Any], Path]:
    """A pytest run of the plugin in a folder of its own under ``work``, with TIMING_PLUGIN
    and ``path`` importable: what TIMING_PLUGIN wrote, and the folder. Exits with pytest's
    output when the run breaks or an item errs."""
    run = Path(tempfile.mkdtemp(dir=work))
    (run / "timing_plugin.py").write_text(TIMING_PLUGIN)
    times = run / "times.json"
    python_path = os.pathsep.join(
        filter(None, [str(run), *map(str, path), os.environ.get("PYTHONPATH")]))
    environment = {**os.environ, **(env or {}), "IMAGETIME_BENCH_TIMES": str(times),
                   "PYTHONPATH": python_path}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p",
           "timing_plugin", *args, "--imagetime-progress=0"]
    proc = subprocess.run(cmd, cwd=run, env=environment, capture_output=True, text=True,
                          check=False)
    if proc.returncode not in (0, 1):
        sys.exit(f"pytest exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    stamps: dict[str, Any] = json.loads(times.read_text())
    report = json.loads(next(run.rglob("report.json")).read_text())
    if report["aggregate"]["errors"]:
        sys.exit(f"{report['aggregate']['errors']} items failed:\n{proc.stdout[-3000:]}")
    return stamps, run


def main() -> None:
    parser = argparse.ArgumentParser(description="generation throughput through the plugin")
    parser.add_argument("--n", type=int, default=120, help="at least this many cases")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kind", default="sd", help="tiny pipeline: sd, sdxl, flux")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--dtype", default=None,
                        help="the plugin's default: float32 on the CPU, bfloat16 on CUDA")
    args = parser.parse_args()
    dtype = args.dtype or ("float32" if args.device == "cpu" else "bfloat16")

    import torch
    from tests.tiny_pipelines import save_pipeline

    files, prompts = case_prompts(args.n)
    # The default (auto) draws in a child process on a GPU and here on the CPU; the other
    # choice is timed beside it.
    on_gpu = args.device != "cpu"
    other = "off" if on_gpu else "on"
    with tempfile.TemporaryDirectory(prefix="imagetime-generation-") as tmp:
        work = Path(tmp)
        pipeline = save_pipeline(args.kind, work / "pipeline")
        results: dict[str, list[float]] = {"bare": [], "plugin": [], "other": [],
                                           "batched": []}
        last_run = None
        for _ in range(args.repeat):
            results["bare"].append(len(prompts) / bare(work, pipeline, args.device, dtype,
                                                       args.steps, args.size, prompts))
            seconds, items, last_run = through_plugin(work, pipeline, args.device, dtype,
                                                      args.steps, args.size, files, 1)
            results["plugin"].append(items / seconds)
            seconds, items, _ = through_plugin(work, pipeline, args.device, dtype, args.steps,
                                               args.size, files, 1, other)
            results["other"].append(items / seconds)
            seconds, items, _ = through_plugin(work, pipeline, args.device, dtype, args.steps,
                                               args.size, files, args.batch)
            results["batched"].append(items / seconds)
            # Each repetition as it ends: a run stopped at a time limit keeps what it measured.
            print("repetition " + ", ".join(f"{k} {v[-1]:.2f}" for k, v in results.items())
                  + " images/s", flush=True)
        # Before the folder goes: what the plugin's own work on each sheet costs alone.
        costs = None if last_run is None else sheet_costs(last_run)
    device = (torch.cuda.get_device_name(0) if args.device.startswith("cuda")
              else platform.processor() or "cpu")
    print(f"machine: {os.cpu_count()} cores, {device}, Python {platform.python_version()}, "
          f"torch {torch.__version__}, diffusers {version('diffusers')}")
    print(f"tiny {args.kind} pipeline, {args.steps} steps, {args.size} px, {len(prompts)} "
          f"prompts, device {args.device}, {dtype}; images/s, median of {args.repeat} [min-max]\n")
    median = {k: statistics.median(v) for k, v in results.items()}
    default = "own process" if on_gpu else "this process"
    labels = (("bare", "bare loop"), ("plugin", f"plugin, batch 1 (default: {default})"),
              ("other", f"plugin, batch 1, --imagetime-model-process={other}"),
              ("batched", f"plugin, batch {args.batch}"))
    for name, label in labels:
        values = results[name]
        print(f"{label:<46} {median[name]:8.2f} [{min(values):.2f}-{max(values):.2f}]")
    target = 0.98 if args.device.startswith("cuda") else 0.95
    ratio = median["plugin"] / median["bare"]
    print(f"\nplugin / bare: {ratio:.3f} (target >= {target}) "
          f"{'PASS' if ratio >= target else 'MISS'}")
    # Each repetition's two runs are minutes apart at most: their ratio drifts less with the
    # machine than the medians do, so it is printed beside them.
    paired = [p / b for p, b in zip(results["plugin"], results["bare"], strict=True)]
    print(f"per repetition: {', '.join(f'{r:.3f}' for r in paired)} "
          f"(median {statistics.median(paired):.3f})")
    added = (1 / median["plugin"] - 1 / median["bare"]) * 1000
    print(f"the plugin adds {added:.1f} ms to an image of {1000 / median['bare']:.1f} ms "
          f"(stored PNG and record, pixel facts, judge, pytest's own per-test work); "
          f"{1000 / median['bare'] * (1 / target - 1):.1f} ms meets the target")
    if costs is not None:
        measure, encode, sheets = costs
        print(f"of which, timed here on {sheets} of its sheets (median, best of 3 each): "
              f"pixel facts {measure:.1f} ms, PNG {encode:.1f} ms")
    print(f"batch {args.batch} speed-up over batch 1: {median['batched'] / median['plugin']:.2f}x")


if __name__ == "__main__":
    main()
