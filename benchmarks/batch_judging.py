"""Batch judging against the synchronous path: HTTP requests, price and wall time.

Runs the same cases twice through the procedural model and the vlm judge (gpt-5.5 prices),
against one local server that speaks Chat Completions, Files and Batches
(``tests/fake_batch.py``): once judging each sheet with its own request (answers after
``--latency`` seconds, ``--concurrency`` at once), once with ``--imagetime-judge-batch`` (the
batch ends after ``--polls`` looks, ``--poll`` seconds apart). Prints the requests each run
made, the judge cost its report gives, and the wall time pytest reports. A local server
answers a batch within seconds; OpenAI's takes up to 24 hours, which this cannot show.

    python benchmarks/batch_judging.py                  # all 750 cases
    python benchmarks/batch_judging.py --quick          # 82 cases (two domains)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_overlap import judged_run
from tests.fake_batch import BatchState, batch_server

from pytest_imagetime.cases.loading import builtin_cases_dir

QUICK = ("constraints.yaml", "kitchen.yaml")


def run(workdir: Path, base_url: str, out: str, paths: Sequence[str],
        extra: Sequence[str]) -> tuple[float, int, float, float]:
    """Seconds pytest reports, items passed, the run's judge cost and its spend."""
    seconds, passed = judged_run(workdir, base_url, workdir / out, paths, extra)
    report = json.loads((workdir / out / "procedural/vlm/report.json").read_text())
    return seconds, passed, report["aggregate"]["cost_usd"], report["spent_usd"]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="82 cases instead of 750")
    parser.add_argument("--latency", type=float, default=0.5,
                        help="seconds a synchronous answer takes (default 0.5)")
    parser.add_argument("--concurrency", type=int, default=8,
                        help="synchronous judge calls at once (default 8, the plugin's)")
    parser.add_argument("--poll", type=float, default=1.0,
                        help="seconds between looks at a batch (default 1)")
    parser.add_argument("--polls", type=int, default=3,
                        help="looks before the local batch has ended (default 3)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="imagetime-batch-bench-") as tmp:
        workdir = Path(tmp)
        names = QUICK if args.quick else tuple(p.name for p in
                                               sorted(builtin_cases_dir().glob("*.yaml")))
        for name in names:
            shutil.copy(builtin_cases_dir() / name, workdir / name)
        state = BatchState(latency_s=args.latency, polls_to_finish=args.polls)
        rows = []
        with batch_server(state) as server:
            for label, out, extra in (
                    ("synchronous", "sync", [f"--imagetime-judge-concurrency={args.concurrency}"]),
                    ("batch", "batch", ["--imagetime-judge-batch",
                                        f"--imagetime-judge-batch-poll={args.poll}"])):
                before = Counter(state.http)
                seconds, passed, cost, spent = run(workdir, server.base_url, out, names, extra)
                made = state.http - before
                rows.append((label, passed, sum(made.values()), made, cost, spent, seconds))
    print(f"{platform.python_implementation()} {platform.python_version()} on "
          f"{os.cpu_count()} CPUs; synchronous answers after {args.latency:g} s, "
          f"{args.concurrency} at once; a batch ends after {args.polls} looks "
          f"{args.poll:g} s apart")
    print(f"{'mode':<12} {'items':>5} {'requests':>8} {'judge cost':>11} {'wall s':>7}  "
          f"requests by route")
    for label, passed, total, made, cost, _spent, seconds in rows:
        routes = ", ".join(f"{route} {n}" for route, n in sorted(made.items()))
        print(f"{label:<12} {passed:>5} {total:>8} {'$' + format(cost, '.4f'):>11} "
              f"{seconds:>7.1f}  {routes}")


if __name__ == "__main__":
    main()
