"""Judge-bound runs: wall time against the ideal N x latency / concurrency.

Runs the cases through the procedural model and the vlm judge, against a local Chat
Completions server that answers after a set latency, and prints the wall time pytest reports
(collection and test phase) beside the ideal N x latency / concurrency and the serial time.
``benchmarks/harness.py`` prints the same figure as its sixth row.

    python benchmarks/judge_overlap.py                      # all 750 cases, 1 s, 16 at once
    python benchmarks/judge_overlap.py --quick              # 82 cases (two domains)
    python benchmarks/judge_overlap.py --latency 0.5 --concurrency 8 --workers 2
    python benchmarks/judge_overlap.py --serial             # also measure concurrency 1
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_openai import ServerState, chat_server

from pytest_imagetime.cases.loading import builtin_cases_dir

QUICK = ("constraints.yaml", "kitchen.yaml")


def run_once(workdir: Path, base_url: str, concurrency: int, workers: int,
             paths: Sequence[str]) -> tuple[float, int]:
    """Seconds pytest reports for the run (collection and test phase, no interpreter start)
    and the number of items that passed."""
    out = workdir / f"out-{os.getpid()}-{concurrency}-{workers}"
    extra = [f"--imagetime-judge-concurrency={concurrency}"]
    if workers:
        extra += ["-n", str(workers)]
    return judged_run(workdir, base_url, out, paths, extra)


def judged_run(workdir: Path, base_url: str, out: Path, paths: Sequence[str],
               extra: Sequence[str]) -> tuple[float, int]:
    """A fresh run of ``paths`` through the procedural model and the vlm judge at
    ``base_url``, writing ``out``: the seconds pytest reports and the items that passed."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths,
               "--imagetime-model=procedural", "--imagetime-size=256",
               f"--imagetime-out={out}", "--imagetime-junit=none", "--imagetime-progress=0",
               *extra]
    env = {**os.environ, "OPENAI_API_KEY": "benchmark", "OPENAI_BASE_URL": base_url}
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                          check=False)
    found = re.search(r"(\d+) passed.* in ([\d.]+)s", done.stdout)
    if done.returncode != 0 or not found:
        raise SystemExit(f"the run failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return float(found.group(2)), int(found.group(1))


@dataclass
class Overlap:
    n: int
    latency: float
    concurrency: int  # in flight at once, over every process
    no_latency: float  # the same run against an instant server: harness and generation
    walls: list[float]

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def ideal(self) -> float:
        return self.n * self.latency / self.concurrency

    @property
    def rounds(self) -> float:
        """The least a run can take: whole rounds of calls, each one latency long."""
        return math.ceil(self.n / self.concurrency) * self.latency

    def spread(self) -> str:
        return f"{self.wall:.2f} s [{min(self.walls):.2f}-{max(self.walls):.2f}]"


def measure(latency: float, concurrency: int, workers: int, repeat: int,
            quick: bool) -> Overlap:
    """Median wall time of ``repeat`` judge-bound runs, after one without latency."""
    with tempfile.TemporaryDirectory(prefix="imagetime-judge-") as tmp, \
            chat_server(ServerState()) as server:
        workdir = Path(tmp)
        paths: list[str] = []
        if quick:
            for name in QUICK:
                shutil.copy(builtin_cases_dir() / name, workdir / name)
            paths = list(QUICK)
        server.state.latency_s = 0.0
        no_latency, n = run_once(workdir, server.base_url, concurrency, workers, paths)
        server.state.latency_s = latency
        walls = [run_once(workdir, server.base_url, concurrency, workers, paths)[0]
                 for _ in range(repeat)]
    return Overlap(n, latency, concurrency * max(1, workers), no_latency, walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per judge call")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--workers", type=int, default=0, help="xdist workers (0: none)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="82 cases instead of all")
    parser.add_argument("--serial", action="store_true", help="also measure concurrency 1")
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{platform.platform()}")
    found = measure(args.latency, args.concurrency, args.workers, args.repeat, args.quick)
    serial = found.n * args.latency + found.no_latency
    print(f"N={found.n} latency={args.latency:g}s concurrency={args.concurrency} per process, "
          f"workers={args.workers or 'none'}, median of {args.repeat} [min-max]")
    print(f"{'figure':<44} {'seconds':>9}")
    print(f"{'run without judge latency (harness + generation)':<44} {found.no_latency:>9.2f}")
    print(f"{'run with latency':<44} {found.spread():>9}")
    print(f"{'ideal N x latency / concurrency':<44} {found.ideal:>9.2f}")
    print(f"{'whole rounds: ceil(N / concurrency) x latency':<44} {found.rounds:>9.2f}")
    print(f"{'serial N x latency + harness':<44} {serial:>9.2f}")
    ratio = found.wall / found.ideal
    print(f"wall / ideal = {ratio:.3f} (target <= 1.2: {'PASS' if ratio <= 1.2 else 'MISS'}); "
          f"speed-up over serial = {serial / found.wall:.1f}x")
    if args.serial:
        with tempfile.TemporaryDirectory() as tmp, chat_server(ServerState()) as server:
            server.state.latency_s = args.latency
            paths = []
            if args.quick:
                for name in QUICK:
                    shutil.copy(builtin_cases_dir() / name, Path(tmp) / name)
                paths = list(QUICK)
            measured, _ = run_once(Path(tmp), server.base_url, 1, args.workers, paths)
        print(f"{'measured at concurrency 1':<44} {measured:>9.2f}")


if __name__ == "__main__":
    main()
