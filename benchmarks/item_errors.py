"""What a run of item errors costs against a run of as many passes, and how much it prints.

Prepares once: the procedural model draws every case at a small size (the sheets and their
records, as ``files:`` reads an earlier run). Then times whole pytest processes (median of
``--repeat`` runs, min-max spread), each into a fresh output directory, pixel judge:

1. passes: ``files:`` over those sheets, every item stored, measured from its recorded facts
   and judged, pass threshold 0 (every item that is a usable sheet passes);
2. errors: ``files:`` over a folder holding one of them, so every other item is an error
   ("no image for case ..."), the failure that a wrong folder or naming gives;
3. for information, the passes run resumed (everything reused, nothing judged).

It prints each figure, the lines each run wrote, and the ratio errors / passes against its
target (<= 1.5) with PASS or MISS.

    python benchmarks/item_errors.py [--repeat 3] [--quick] [--src PATH]

``--quick`` uses the 82 cases of constraints.yaml and kitchen.yaml instead of all of them.
``--src`` runs the timed processes with another checkout's ``src`` first on the path, to
measure an earlier commit with the same harness.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

TARGET = 1.5
SIZE = "--imagetime-size=128"


def _env(tmp: Path, src: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    (tmp / "tmp").mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmp / "tmp")
    env["IMAGETIME_CACHE_DIR"] = str(tmp / "imagetime-cache")
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH")]))
    return env


def _pytest(args: Sequence[str], tmp: Path, src: Path | None) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tmp, env=_env(tmp, src), capture_output=True, text=True,
                          check=False)
    seconds = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"pytest {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                 f"{proc.stderr[-3000:]}")
    return seconds, proc.stdout + proc.stderr


def _outcome(output: str) -> str:
    last = [line for line in output.strip().splitlines() if " in " in line]
    return re.sub(r" in [0-9.]+s.*", "", last[-1]) if last else "?"


def _timed(name: str, args: Sequence[str], tmp: Path, src: Path | None, repeat: int,
           fresh: Path | None) -> float:
    seconds, lines, outcome = [], 0, ""
    for _ in range(repeat):
        if fresh is not None:
            shutil.rmtree(fresh, ignore_errors=True)
        took, output = _pytest(args, tmp, src)
        seconds.append(took)
        lines, outcome = len(output.splitlines()), _outcome(output)
    median = statistics.median(seconds)
    print(f"{name:<26} {median:8.2f} s [{min(seconds):.2f}-{max(seconds):.2f}] "
          f"{lines:6d} lines  ({outcome})")
    return median


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--src", type=Path, help="another checkout's src folder to time")
    args = parser.parse_args(argv)
    from pytest_imagetime.cases.loading import builtin_cases_dir

    cases = builtin_cases_dir()
    paths = [str(cases / "constraints.yaml"), str(cases / "kitchen.yaml")] if args.quick \
        else [str(cases)]
    src = args.src.resolve() if args.src is not None else None
    import platform

    import pytest

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"machine: {os.cpu_count()} cores, load average {load}; Python "
          f"{platform.python_version()}, pytest {pytest.__version__}; plugin from "
          f"{src or 'this checkout'}")
    with tempfile.TemporaryDirectory(prefix="imagetime-item-errors-") as root:
        tmp = Path(root)
        print("preparing: the procedural model draws every case once ...", flush=True)
        _pytest([*paths, "--imagetime-model=procedural", "--imagetime-judge=pixel", SIZE,
                 f"--imagetime-out={tmp / 'drawn'}", "--imagetime-progress=0"], tmp, None)
        sheets = tmp / "drawn" / "procedural" / "images"
        one = tmp / "one"
        one.mkdir()
        first = sorted(sheets.glob("*.png"))[0]
        shutil.copy(first, one / first.name)
        common = ["--imagetime-judge=pixel", SIZE, "--imagetime-progress=0",
                  "--imagetime-pass-threshold=0"]
        passes_out, errors_out = tmp / "passes", tmp / "errors"
        print(f"{'run':<26} {'wall (median)':>22} {'output':>12}")
        passes = _timed("passes", [*paths, f"--imagetime-model=files:{sheets}", *common,
                                   f"--imagetime-out={passes_out}"],
                        tmp, src, args.repeat, passes_out)
        errors = _timed("errors", [*paths, f"--imagetime-model=files:{one}", *common,
                                   f"--imagetime-out={errors_out}"],
                        tmp, src, args.repeat, errors_out)
        resumed = _timed("passes, resumed (info)",
                         [*paths, f"--imagetime-model=files:{sheets}", *common,
                          f"--imagetime-out={passes_out}"], tmp, src, args.repeat, None)
    ratio = errors / passes
    verdict = "PASS" if ratio <= TARGET else "MISS"
    print(f"errors / passes = {ratio:.2f} (target <= {TARGET}): {verdict}")
    print(f"errors / resumed passes = {errors / resumed:.2f} (information: against the "
          f"cheapest passes there are, every result reused)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
