"""How long the offline pixel metrics take per sheet.

Renders one sheet of every procedural variant (no download, no GPU) at each size, all sizes
before any timing (as a harness has images in memory by then), then times ``analyze`` over
each size's sheets several times and prints, per size, the median milliseconds per sheet
with the min-max spread over the repetitions (wall clock, one warm-up pass first), and
whether the speed goal holds: a 512 px sheet measured in under GOAL_MS.

    python benchmarks/pixel_metrics.py [--sizes 64 256 512 1024] [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import PIL
from PIL import Image

from pytest_imagetime.models.base import GenerationRequest
from pytest_imagetime.models.procedural import VARIANTS, ProceduralModel
from pytest_imagetime.sheet import METRICS_VERSION
from pytest_imagetime.sheet.metrics import analyze

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pixel_separation import benchmark_case  # the same case: numbers comparable

GOAL_SIZE = 512
GOAL_MS = 100.0  # per sheet: the metrics run on every sheet, beside the model and the judge


def sheets(size: int) -> list[Image.Image]:
    """One sheet of every procedural variant, good and broken (they take different paths)."""
    case = benchmark_case()
    return [ProceduralModel(None if variant == "good" else variant)
            .generate(request=GenerationRequest(case, "prompt-only", size, seed)).image
            for seed, variant in enumerate(VARIANTS)]


def ms_per_sheet(images: list[Image.Image], repeats: int) -> list[float]:
    """Mean milliseconds per sheet of each repetition, after one warm-up pass."""
    for image in images:
        analyze(image)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for image in images:
            analyze(image)
        times.append((time.perf_counter() - started) * 1000 / len(images))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256, GOAL_SIZE, 1024],
                        help="sheet sides in pixels")
    parser.add_argument("--repeats", type=int, default=7, help="timed passes per size")
    args = parser.parse_args()
    print(f"pixel metrics speed: pixel-metrics/{METRICS_VERSION}, {len(VARIANTS)} procedural "
          f"sheets a size, {args.repeats} passes")
    print(f"{os.cpu_count()} cores, python {platform.python_version()}, numpy {np.__version__}, "
          f"pillow {PIL.__version__}, {platform.machine()} {platform.system()}")
    print()
    header = f"{'size':>6}{'ms/sheet':>10}{'min':>8}{'max':>8}  goal"
    print(header)
    print("-" * len(header))
    rendered = {size: sheets(size) for size in args.sizes}
    for size, images in rendered.items():
        times = ms_per_sheet(images, args.repeats)
        median = statistics.median(times)
        goal = "" if size != GOAL_SIZE else (
            f"  < {GOAL_MS:g} ms: {'met' if median < GOAL_MS else 'missed'}")
        print(f"{size:>6}{median:>10.1f}{min(times):>8.1f}{max(times):>8.1f}{goal}")


if __name__ == "__main__":
    main()
