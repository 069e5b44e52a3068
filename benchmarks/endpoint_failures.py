"""Judge endpoints that fail as real ones do: how long a run takes to stop, and what it keeps.

Runs the cases through the procedural model and the vlm judge with the default judge
settings (120 s timeout, 2 retries, 2 re-asks, 8 at once), against local endpoints on
127.0.0.1: one that answers at once (the baseline), one that refuses connections, one that
never answers, one that rejects the key, one that answers 100 calls and then hangs. Prints
each run's wall time (what pytest reports), its errors, and the requests the endpoint
received. Then the fault table: the same run
against an endpoint with 20% random faults of every kind, counting items lost (missing from
the report), zeros (an error item with a score), errors, and what a rerun redoes.

    python benchmarks/endpoint_failures.py                 # all 750 cases
    python benchmarks/endpoint_failures.py --quick         # 82 cases (two domains)
    python benchmarks/endpoint_failures.py --only faults   # only the fault table
    python benchmarks/endpoint_failures.py --only stops --endpoints refused,rejected
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fake_openai import ServerState, chat_server, closed_port_url

from pytest_imagetime.cases.loading import builtin_cases_dir

QUICK = ("constraints.yaml", "kitchen.yaml")
KEY = "sk-proj-benchmark-0123456789abcdef"
ENDPOINTS = ("healthy", "refused", "hanging", "rejected", "hangs-later")


@dataclass
class Run:
    wall_s: float
    outcomes: dict[str, int]
    report: dict[str, Any]

    @property
    def items(self) -> int:
        return len(self.report["items"])

    def reasons(self) -> Counter[str]:
        return Counter(i["error"].split(": ", 1)[1][:90] for i in self.report["items"]
                       if i["status"] == "error")


def run(workdir: Path, out: str, base_url: str, paths: Sequence[str], *extra: str,
        key: str = KEY) -> Run:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *paths,
               "--imagetime-model=procedural", "--imagetime-size=256",
               f"--imagetime-out={out}", "--imagetime-junit=none", "--imagetime-progress=0",
               "--imagetime-judge-price=2,8", *extra]
    env = {**os.environ, "OPENAI_API_KEY": key, "OPENAI_BASE_URL": base_url}
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                          check=False)
    found = re.search(r"in ([\d.]+)s", done.stdout.splitlines()[-1] if done.stdout else "")
    report_path = workdir / out / "procedural" / "vlm" / "report.json"
    if not found or not report_path.exists():
        raise SystemExit(f"the run did not finish:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    outcomes = {kind: int(n) for n, kind in re.findall(r"(\d+) (passed|failed|errors?)",
                                                        done.stdout.splitlines()[-1])}
    return Run(float(found.group(1)), outcomes, json.loads(report_path.read_text()))


def stops(workdir: Path, paths: Sequence[str], endpoints: Sequence[str]) -> None:
    print(f"{'endpoint':<28} {'wall s':>8} {'items':>6} {'errors':>7} {'POSTs':>6} "
          f"{'GETs':>5}  reason")
    if "healthy" in endpoints:
        with chat_server(ServerState()) as healthy:
            found = run(workdir, "healthy", healthy.base_url, paths)
            print(f"{'answers at once (baseline)':<28} {found.wall_s:>8.2f} {found.items:>6} "
                  f"{sum(found.reasons().values()):>7} {len(healthy.state.requests):>6} "
                  f"{len(healthy.state.gets):>5}")
    if "refused" in endpoints:
        found = run(workdir, "refused", closed_port_url(), paths)
        _row("refuses connections", found, None, None)
    if "hanging" in endpoints:
        with chat_server(ServerState(hang_s=3600.0)) as hanging:
            found = run(workdir, "hanging", hanging.base_url, paths)
            _row("never answers", found, len(hanging.state.requests), len(hanging.state.gets))
    if "hangs-later" in endpoints:
        with chat_server(ServerState(hang_s=3600.0, hang_after=100)) as later:
            found = run(workdir, "hangs-later", later.base_url, paths)
            _row("hangs after 100 answers", found, len(later.state.requests),
                 len(later.state.gets))
    if "rejected" in endpoints:
        with chat_server(ServerState(required_key="sk-proj-the-right-one-00000000")) \
                as rejecting:
            found = run(workdir, "rejected", rejecting.base_url, paths)
            _row("rejects the key (401)", found, len(rejecting.state.requests),
                 len(rejecting.state.gets))


def _row(name: str, found: Run, posts: int | None, gets: int | None) -> None:
    reasons = found.reasons()
    errors = sum(reasons.values())
    (reason, _n), = reasons.most_common(1) or [("-", 0)]
    print(f"{name:<28} {found.wall_s:>8.2f} {found.items:>6} {errors:>7} "
          f"{'-' if posts is None else posts:>6} {'-' if gets is None else gets:>5}  "
          f"{len(reasons)} reason(s): {reason}...")


def faults(workdir: Path, paths: Sequence[str], rate: float, timeout_s: float) -> None:
    with chat_server(ServerState()) as server:
        clean = run(workdir, "clean", server.base_url, paths)
        server.state.fault_rate = rate
        server.state.timeout_sleep_s = timeout_s * 2
        before = len(server.state.requests)
        flaky = run(workdir, "flaky", server.base_url, paths,
                    f"--imagetime-judge-timeout={timeout_s:g}")
        requests = len(server.state.requests) - before
        served = dict(sorted(server.state.faults_served.items()))
        server.state.fault_rate = 0.0
        before = len(server.state.requests)
        rerun = run(workdir, "flaky", server.base_url, paths,
                    f"--imagetime-judge-timeout={timeout_s:g}")
        rerun_requests = len(server.state.requests) - before
    n = clean.items
    keyed = {i["key"]: i for i in flaky.report["items"]}
    clean_scores = {i["key"]: i["scores"] for i in clean.report["items"]}
    errors = [i for i in keyed.values() if i["status"] == "error"]
    zeros = sum(1 for i in errors if any(v is not None for v in i["scores"].values()))
    differ = sum(1 for k, i in keyed.items() if i["status"] != "error"
                 and i["scores"] != clean_scores[k])
    rerun_differ = sum(1 for i in rerun.report["items"]
                       if i["scores"] != clean_scores[i["key"]])
    print(f"{rate:.0%} random faults of every kind, judge timeout {timeout_s:g} s (the fake "
          f"'timeout' fault waits {timeout_s * 2:g} s), other settings default")
    print(f"faults served: {sum(served.values())} {served}")
    print(f"{'figure':<58} {'value':>8}")
    for name, value in [
        ("items", n), ("items in the report (lost = items - this)", len(keyed)),
        ("judged", len(keyed) - len(errors)), ("errors (with their reason)", len(errors)),
        ("zeros: error items with a score", zeros),
        ("judged items whose scores differ from the clean run", differ),
        ("requests of the faulty run", requests),
        ("requests of the rerun (no faults): = errors redone", rerun_requests),
        ("rerun: items whose scores differ from the clean run", rerun_differ),
        ("wall s: clean / faulty", f"{clean.wall_s:.1f}/{flaky.wall_s:.1f}"),
    ]:
        print(f"{name:<58} {value:>8}")
    for reason, count in flaky.reasons().most_common(6):
        print(f"  {count:>4} x {reason}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="82 cases instead of all")
    parser.add_argument("--only", choices=("stops", "faults"))
    parser.add_argument("--endpoints", default=",".join(ENDPOINTS),
                        help=f"which of {','.join(ENDPOINTS)} to time (default: all)")
    parser.add_argument("--rate", type=float, default=0.2, help="fault rate (default 0.2)")
    parser.add_argument("--fault-timeout", type=float, default=1.0,
                        help="judge timeout for the fault table (default 1 s)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"{platform.platform()}")
    with tempfile.TemporaryDirectory(prefix="imagetime-endpoint-") as tmp:
        workdir = Path(tmp)
        paths: list[str] = []
        if args.quick:
            for name in QUICK:
                shutil.copy(builtin_cases_dir() / name, workdir / name)
            paths = list(QUICK)
        if args.only in (None, "stops"):
            stops(workdir, paths, args.endpoints.split(","))
        if args.only in (None, "faults"):
            faults(workdir, paths, args.rate, args.fault_timeout)


if __name__ == "__main__":
    main()
