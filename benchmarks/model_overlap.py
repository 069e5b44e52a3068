"""Whether the harness keeps up with a model that leaves this machine's CPU idle.

What a GPU does to the pytest process, without a GPU: a backend that answers each sheet
after a set latency, sleeping (so it takes no CPU, as a pipeline waiting on its GPU), with a
sheet of the benchmark's size that it drew once beforehand. The harness's work per sheet is
real: the PNG, the pixel facts, the pixel judge, the records and pytest's protocol. The
backend declares ``draws_on_gpu``, as the diffusers backend does on CUDA, so the default
``--imagetime-model-process=auto`` draws in a child process and measures in measuring
processes; ``off`` keeps everything in the pytest process, as before that option existed.

Each run is timed from the moment the backend returned its WARM_UP-th sheet (the first
items start the child and the measuring processes, as loading weights would) to the end of
the last item, against the ideal: the sheets the backend drew after that moment, times the
latency. A ratio of 1.0 means the harness costs the model nothing. (Timing from the first
item's end instead would flatter the harness: the backend draws ahead while the first item
waits for its measuring processes to start.)

    python benchmarks/model_overlap.py [--n 60] [--repeat 3] [--size 1024] [--latency 0.25]
    python benchmarks/model_overlap.py --size 64 --latency 0.04 --n 120   # the tiny pipeline

Target: within 2% of the ideal (the GPU target of ``benchmarks/generation.py``).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generation import case_prompts, timed_pytest

TARGET = 0.98
WARM_UP = 5  # sheets drawn before the timed interval starts

BACKEND = '''\
import functools
import os
import time

from pytest_imagetime.models.base import Generated, GenerationRequest
from pytest_imagetime.models.procedural import ProceduralModel


@functools.cache
def _sheet(case_id: str, size: int):
    from pytest_imagetime.cases.loading import builtin_cases_dir, load_case_file

    for path in sorted(builtin_cases_dir().glob("*.yaml")):
        for case in load_case_file(path):
            if case.id == case_id:
                request = GenerationRequest(case, "prompt-only", size, 0)
                return ProceduralModel().generate(request=request).image
    raise LookupError(case_id)


class LatencyModel:
    """latency:SECONDS,CASE_ID: sleeps, then returns CASE_ID's procedural sheet."""

    draws_on_gpu = True

    def __init__(self, argument=None):
        seconds, _, self.case_id = (argument or "0.1,").partition(",")
        self.seconds = float(seconds)

    @property
    def name(self):
        return f"latency:{self.seconds}"

    def config(self):
        return {"seconds": self.seconds}

    def generate(self, *, request):
        sheet = _sheet(self.case_id, request.size)  # drawn once, before the first timed item
        time.sleep(self.seconds)
        image = sheet.copy()
        with open(os.environ["IMAGETIME_BENCH_DRAWN"], "a") as stamps:
            stamps.write(f"{time.perf_counter()}\\n")  # the clock is the machine's, not ours
        return Generated(image, {"seconds": self.seconds})
'''


def install_backend(site: Path) -> None:
    """The backend as an installed package would have it: a module and an entry point."""
    (site / "latency_backend.py").write_text(textwrap.dedent(BACKEND))
    info = site / "latency_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: latency-backend\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[imagetime.models]\nlatency = latency_backend:LatencyModel\n")


def through_plugin(work: Path, site: Path, files: Sequence[Path], latency: float, size: int,
                   case_id: str, process: str) -> tuple[float, int]:
    """Seconds from the WARM_UP-th sheet drawn to the last item's end, and the sheets drawn
    after that sheet."""
    drawn = Path(tempfile.mkdtemp(dir=work)) / "drawn.txt"
    stamps, _ = timed_pytest(work, [
        *map(str, files), f"--imagetime-model=latency:{latency},{case_id}",
        f"--imagetime-size={size}", "--imagetime-judge=pixel",
        f"--imagetime-model-process={process}"],
        env={"IMAGETIME_BENCH_DRAWN": str(drawn)}, path=[site])
    sheets = [float(line) for line in drawn.read_text().split()]
    return stamps["last"] - sheets[WARM_UP - 1], len(sheets) - WARM_UP


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=60, help="at least this many cases")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=1024, help="sheet side in pixels")
    parser.add_argument("--latency", type=float, default=0.25, help="seconds a sheet")
    args = parser.parse_args()

    files, prompts = case_prompts(args.n)
    from pytest_imagetime.cases.loading import load_case_file

    case_id = load_case_file(files[0])[0].id
    results: dict[str, list[float]] = {"auto": [], "off": []}
    with tempfile.TemporaryDirectory(prefix="imagetime-model-overlap-") as tmp:
        work = Path(tmp)
        site = work / "site"
        site.mkdir()
        install_backend(site)
        for _ in range(args.repeat):
            for process in results:
                seconds, items = through_plugin(work, site, files, args.latency, args.size,
                                                case_id, process)
                results[process].append(items * args.latency / seconds)
            print("repetition " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in results.items())
                  + " of the ideal", flush=True)
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"numpy {version('numpy')}, pillow {version('pillow')}")
    print(f"{len(prompts)} sheets of {args.size} px, {args.latency} s each, pixel judge; "
          f"share of the ideal (sheets x latency), median of {args.repeat} [min-max]\n")
    labels = (("auto", "drawing in a child, measuring processes (auto)"),
              ("off", "everything in the pytest process (off)"))
    for name, label in labels:
        values = results[name]
        median = statistics.median(values)
        verdict = "PASS" if median >= TARGET else "MISS"
        print(f"{label:<48} {median:6.3f} [{min(values):.3f}-{max(values):.3f}]  "
              f"target >= {TARGET} {verdict}")
    for name, _ in labels:
        per_sheet = (1 / statistics.median(results[name]) - 1) * args.latency * 1000
        print(f"{name}: the harness adds {per_sheet:.1f} ms a sheet to the model's "
              f"{args.latency * 1000:.0f} ms")


if __name__ == "__main__":
    main()
