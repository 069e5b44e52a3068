"""Judge-bound runs: wall time against the ideal N x latency / concurrency.

Runs the benchmark's first two domains (82 cases) through the procedural model and the vlm
judge, against a local Chat Completions server that answers after a set latency, and prints
the wall time of the test phase beside the ideal and the serial time.

    python benchmarks/judge_overlap.py                      # N=82, 1 s, concurrency 16
    python benchmarks/judge_overlap.py --latency 0.5 --concurrency 8 --workers 2
    python benchmarks/judge_overlap.py --serial             # also measure concurrency 1
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_openai import ServerState, chat_server

from pytest_imagetime.cases import builtin_cases_dir

DOMAINS = ("constraints.yaml", "kitchen.yaml")


def run_once(workdir: Path, base_url: str, concurrency: int, workers: int) -> float:
    """Seconds pytest reports for the run (collection and test phase, no interpreter start)."""
    out = workdir / f"out-{os.getpid()}-{concurrency}-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *DOMAINS,
               "--imagetime-model=procedural", "--imagetime-size=256",
               f"--imagetime-judge-concurrency={concurrency}", f"--imagetime-out={out}",
               "--imagetime-junit=none"]
    if workers:
        command += ["-n", str(workers)]
    env = {**os.environ, "OPENAI_API_KEY": "benchmark", "OPENAI_BASE_URL": base_url}
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                          check=False)
    found = re.search(r"(\d+) passed.* in ([\d.]+)s", done.stdout)
    if done.returncode != 0 or not found:
        raise SystemExit(f"the run failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return float(found.group(2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per judge call")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--workers", type=int, default=0, help="xdist workers (0: none)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serial", action="store_true", help="also measure concurrency 1")
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{platform.platform()}")
    with tempfile.TemporaryDirectory() as tmp, chat_server(ServerState()) as server:
        workdir = Path(tmp)
        for name in DOMAINS:
            shutil.copy(builtin_cases_dir() / name, workdir / name)
        n = 82
        server.state.latency_s = 0.0
        no_latency = statistics.median(run_once(workdir, server.base_url, args.concurrency,
                                                args.workers) for _ in range(args.repeat))
        server.state.latency_s = args.latency
        walls = [run_once(workdir, server.base_url, args.concurrency, args.workers)
                 for _ in range(args.repeat)]
        wall = statistics.median(walls)
        total_concurrency = args.concurrency * max(1, args.workers)
        ideal = n * args.latency / total_concurrency
        serial = n * args.latency + no_latency
        print(f"N={n} latency={args.latency:g}s concurrency={args.concurrency} per process, "
              f"workers={args.workers or 'none'}, repeats={args.repeat}")
        print(f"{'figure':<44} {'seconds':>9}")
        print(f"{'run without judge latency (harness + generation)':<44} {no_latency:>9.2f}")
        print(f"{'run with latency (median; spread)':<44} {wall:>9.2f}  "
              f"({min(walls):.2f}-{max(walls):.2f})")
        print(f"{'ideal N x latency / concurrency':<44} {ideal:>9.2f}")
        print(f"{'serial N x latency + harness':<44} {serial:>9.2f}")
        print(f"wall / ideal = {wall / ideal:.2f}; wall / (ideal + harness) = "
              f"{wall / (ideal + no_latency):.2f}; speed-up over serial = {serial / wall:.1f}x")
        if args.serial:
            server.state.latency_s = args.latency
            measured = run_once(workdir, server.base_url, 1, args.workers)
            print(f"{'measured at concurrency 1':<44} {measured:>9.2f}")


if __name__ == "__main__":
    main()
