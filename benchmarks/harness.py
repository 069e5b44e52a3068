"""What the pytest harness costs over plain pytest, on this machine.

Times whole pytest subprocesses (median of ``--repeat`` runs, min-max spread) and prints,
beside each figure, its target and PASS or MISS:

1. collection of the case set against plain pytest collecting as many parametrized tests;
   beside it, for information, what the plugin costs a session that does not use it (the same
   plain collection with the plugin loaded, as an environment that installs it has it);
2. a full run with a model and a judge that cost nothing (the ``files`` model over sheets
   an earlier run made, with their records, so their pixel facts are known; the ``replay``
   judge over their judgments) against as many plain tests that each write one 256x256 PNG;
   beside it, for information, the same PNGs without records (the plugin measures every
   sheet's pixel facts) and the CPU-bound procedural run (the procedural model draws every
   sheet, the pixel judge scores it);
3. resuming the finished procedural run against its collection (the report must show
   nothing generated or judged); beside it, for information, against plain pytest running as
   many tests that do nothing (pytest's own cost per test, which a resume cannot avoid), and
   the resume's floor: its collection plus what reporting as many items costs with pytest's
   per-phase hooks skipped as a resume skips them (plain tests that do nothing, replayed by
   ``pytest_imagetime.plugin.replay``), that is a resume whose lookups, records and report files
   cost nothing;
4. peak RSS of the procedural run against a run of a tenth of the cases;
5. the procedural run with ``-n 2`` against without;
6. a judge-bound run (vlm judge against a local server answering after ``--latency``
   seconds, ``--concurrency`` calls at once) against N x latency / concurrency
   (``benchmarks/judge_overlap.py`` prints its details).

    python benchmarks/harness.py [--repeat 3] [--quick] [--latency 1] [--concurrency 16]
                                 [--no-judge] [--python PATH]

``--quick`` uses the 82 cases of constraints.yaml and kitchen.yaml instead of all of them.
``--python`` runs the timed pytest processes (figures 1 to 5) with another interpreter, such as
that of a virtual environment holding only what a user installs (``pip install
'pytest-imagetime[xdist]'``): every pytest process loads every plugin its environment
installs, and a development environment's (anyio's imports trio where selenium put it,
Hypothesis's summary imports Hypothesis) cost each process about half a second, which
flatters figures 1 to 3 and weighs on figure 5. The table names the plugins it found.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from judge_overlap import Overlap, measure

CASES = Path(__file__).resolve().parents[1] / "cases"
QUICK_FILES = ("constraints.yaml", "kitchen.yaml")
GNU_TIME = Path("/usr/bin/time")
# The interpreter of the timed pytest processes (--python); figure 6 uses this one.
PYTHON = [sys.executable]
DESCRIBE = """\
import json, platform
from importlib import metadata
names = ("pytest", "numpy", "pillow", "pytest-xdist", "pytest-imagetime")
versions = {}
for name in names:
    try:
        versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        versions[name] = None
plugins = sorted({ep.dist.name for ep in metadata.entry_points(group="pytest11")
                  if ep.dist is not None} - {"pytest-imagetime", "pytest-xdist"})
print(json.dumps({"python": platform.python_version(), "versions": versions,
                  "plugins": plugins}))
"""
IMAGETIME = ("--imagetime-model=procedural", "--imagetime-judge=pixel")
RUN = (*IMAGETIME, "--imagetime-size=256")
REPORT = Path("reports/procedural/pixel/report.json")
# Plain pytest is plain: the baselines run without this package's entry points.
WITHOUT_PLUGIN = ("-p", "no:imagetime", "-p", "no:imagetime-tempviz")

PLAIN_COLLECT = """\
import pytest


@pytest.mark.parametrize("i", range({n}))
def test_item(i):
    pass
"""

# Plain pytest's tests run as a resume runs its finished items: the floor of figure 3.
PLAIN_REPLAY = """\
import pytest

from pytest_imagetime.plugin.replay import replay


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    replay(item, nextitem)
    return True
"""

# Plain pytest doing the one piece of real work every benchmark item does: write a sheet.
PLAIN_RUN = """\
from pathlib import Path

import pytest
from PIL import Image

OUT = Path(__file__).parent / "png"
OUT.mkdir(exist_ok=True)


@pytest.mark.parametrize("i", range({n}))
def test_item(i):
    Image.new("RGB", (256, 256), (i % 256, 64, 128)).save(OUT / f"{{i}}.png")
"""


@dataclass
class Sample:
    seconds: float
    rss_kib: int
    output: str


@dataclass
class Series:
    """Repeated measurements of one command."""

    seconds: list[float] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)

    def add(self, sample: Sample) -> None:
        self.seconds.append(sample.seconds)
        self.rss_kib.append(sample.rss_kib)

    def time(self) -> float:
        return statistics.median(self.seconds)

    def rss(self) -> float:
        return statistics.median(self.rss_kib)

    def time_text(self) -> str:
        return f"{self.time():7.2f} s [{min(self.seconds):.2f}-{max(self.seconds):.2f}]"

    def rss_text(self) -> str:
        lo, hi = min(self.rss_kib) / 1024, max(self.rss_kib) / 1024
        return f"{self.rss() / 1024:7.1f} MiB [{lo:.1f}-{hi:.1f}]"


def clean_env(tmp: Path) -> dict[str, str]:
    # Bytecode caching is part of what a user's repeated runs get.
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # pytest's temporary folders (xdist makes one per run) in the benchmark's own folder: at
    # exit pytest deletes all but its three newest, and those of other sessions on this
    # machine (a test suite's, say) can take a second to delete.
    tmp.mkdir(exist_ok=True)
    env["TMPDIR"] = str(tmp)
    # Checked case files are kept in the benchmark's folder too: the first run (prepare)
    # parses them, every timed run finds them kept, as a user's runs after the first do.
    env["IMAGETIME_CACHE_DIR"] = str(tmp / "imagetime-cache")
    return env


def pytest_run(args: Sequence[str], cwd: Path) -> Sample:
    """One pytest subprocess: wall time of the whole process and its peak RSS."""
    rss_file = cwd / ".rss"
    cmd = [str(GNU_TIME), "-f", "%M", "-o", str(rss_file),
           *PYTHON, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    start = time.perf_counter()
    # Every run's folder lies in the benchmark's root; its temporary folder does too.
    proc = subprocess.run(cmd, cwd=cwd, env=clean_env(cwd.parent / "tmp"), capture_output=True,
                          text=True, check=False)
    seconds = time.perf_counter() - start
    # 1: some items failed their thresholds; that is a score, not a broken run.
    if proc.returncode not in (0, 1):
        sys.exit(f"pytest {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-3000:]}"
                 f"\n{proc.stderr[-3000:]}")
    rss_kib = int(rss_file.read_text().split()[-1])
    rss_file.unlink()
    return Sample(seconds, rss_kib, proc.stdout)


def collected(output: str) -> int:
    found = re.search(r"(\d+) tests? collected", output)
    if found is None:
        sys.exit(f"no item count in the collection output:\n{output[-2000:]}")
    return int(found.group(1))


def copy_cases(files: Sequence[Path], dest: Path, limit: int | None = None) -> None:
    """Copy case files into dest, keeping only the first `limit` cases over all of them."""
    dest.mkdir(parents=True)
    left = limit
    for src in files:
        if left is None:
            shutil.copy(src, dest / src.name)
            continue
        if left <= 0:
            break
        doc = yaml.safe_load(src.read_text())
        doc["cases"] = doc["cases"][:left]
        left -= len(doc["cases"])
        (dest / src.name).write_text(yaml.safe_dump(doc, sort_keys=False))


def report_counts(cwd: Path) -> tuple[int, int]:
    items = json.loads((cwd / REPORT).read_text())["items"]
    return sum(bool(i["generated"]) for i in items), sum(bool(i["judged"]) for i in items)


@dataclass
class Bench:
    """Temporary directories and case selection shared by every repetition."""

    root: Path
    quick: bool
    case_args: list[str] = field(default_factory=list)
    subset_args: list[str] = field(default_factory=list)
    free_args: list[str] = field(default_factory=list)
    bare_args: list[str] = field(default_factory=list)
    items: int = 0

    def prepare(self) -> None:
        files = [CASES / n for n in QUICK_FILES] if self.quick else sorted(CASES.glob("*.yaml"))
        if self.quick:
            copy_cases(files, self.root / "cases")
            self.case_args = [str(self.root / "cases")]
        # Without a path the plugin collects the packaged cases, as a user's run does.
        self.items = collected(pytest_run(["--collect-only", *IMAGETIME, *self.case_args],
                                          self.fresh("count")).output)
        copy_cases(files, self.root / "subset", limit=self.items // 10)
        self.subset_args = [str(self.root / "subset")]
        for name, template in (("plain_collect", PLAIN_COLLECT), ("plain_run", PLAIN_RUN)):
            (self.fresh(name) / "test_plain.py").write_text(template.format(n=self.items))
        replayed = self.fresh("plain_replay")
        (replayed / "test_plain.py").write_text(PLAIN_COLLECT.format(n=self.items))
        (replayed / "conftest.py").write_text(PLAIN_REPLAY)
        # Sheets and judgments made once, for the run whose model and judge cost nothing.
        made = self.fresh("made")
        pytest_run([*RUN, *self.case_args], made)
        images = made / "reports/procedural/images"
        replay = f"--imagetime-judge=replay:{made / 'reports/procedural/pixel'}"
        self.free_args = [f"--imagetime-model=files:{images}", replay, *self.case_args]
        # The same PNGs without their records: the plugin measures their pixel facts.
        bare = self.fresh("bare")
        for png in images.glob("*.png"):
            shutil.copy(png, bare / png.name)
        self.bare_args = [f"--imagetime-model=files:{bare}", replay, *self.case_args]

    def fresh(self, name: str) -> Path:
        path = self.root / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir()
        return path

    def plain(self, name: str, *args: str, plugin: bool = False) -> Sample:
        shutil.rmtree(self.root / name / "png", ignore_errors=True)
        return pytest_run([*(() if plugin else WITHOUT_PLUGIN), *args, "test_plain.py"],
                          self.root / name)


@dataclass
class Results:
    collect: Series = field(default_factory=Series)
    plain_collect: Series = field(default_factory=Series)
    unused_collect: Series = field(default_factory=Series)
    free: Series = field(default_factory=Series)
    bare: Series = field(default_factory=Series)
    full: Series = field(default_factory=Series)
    plain_run: Series = field(default_factory=Series)
    resume: Series = field(default_factory=Series)
    plain_trivial: Series = field(default_factory=Series)
    plain_replay: Series = field(default_factory=Series)
    subset: Series = field(default_factory=Series)
    xdist: Series = field(default_factory=Series)
    resumed_counts: list[tuple[int, int]] = field(default_factory=list)


def repetition(bench: Bench, res: Results) -> None:
    """One of each measurement, interleaved so drift in the machine hits all alike."""
    cases = bench.case_args
    res.collect.add(pytest_run(["--collect-only", *IMAGETIME, *cases], bench.fresh("collect")))
    res.plain_collect.add(bench.plain("plain_collect", "--collect-only"))
    res.unused_collect.add(bench.plain("plain_collect", "--collect-only", plugin=True))
    res.free.add(pytest_run(bench.free_args, bench.fresh("free")))
    res.plain_run.add(bench.plain("plain_run"))
    res.bare.add(pytest_run(bench.bare_args, bench.fresh("bare_run")))
    run_dir = bench.fresh("run")
    res.full.add(pytest_run([*RUN, *cases], run_dir))
    res.resume.add(pytest_run([*RUN, *cases], run_dir))
    res.resumed_counts.append(report_counts(run_dir))
    res.plain_trivial.add(bench.plain("plain_collect"))
    res.plain_replay.add(bench.plain("plain_replay"))
    res.subset.add(pytest_run([*RUN, *bench.subset_args], bench.fresh("subset_run")))
    res.xdist.add(pytest_run(["-n", "2", *RUN, *cases], bench.fresh("xdist")))


def verdict(ratio: float, target: float, at_most: bool) -> str:
    ok = ratio <= target if at_most else ratio >= target
    return "PASS" if ok else "MISS"


def row(label: str, ours: str, base: str, ratio: float, target: float, at_most: bool) -> str:
    sign = "<=" if at_most else ">="
    return (f"{label:<22} {ours:<32} {base:<32} {ratio:6.2f}x  {sign} {target:<4}"
            f" {verdict(ratio, target, at_most)}")


def environment() -> dict[str, Any]:
    """What the timed interpreter runs: versions, and the other pytest plugins it loads."""
    done = subprocess.run([*PYTHON, "-c", DESCRIBE], capture_output=True, text=True,
                          check=True)
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def print_table(bench: Bench, res: Results, repeat: int, found: Overlap | None) -> None:
    subset = bench.items // 10
    env = environment()
    versions = ", ".join(f"{name} {found}" for name, found in env["versions"].items()
                         if found)
    print(f"machine: {os.cpu_count()} cores; timed interpreter {PYTHON[0]}: "
          f"Python {env['python']}, {versions}")
    print(f"other pytest plugins it loads: {', '.join(env['plugins']) or 'none'}")
    print(f"cases: {bench.items} ({'quick' if bench.quick else 'all'}), "
          f"median of {repeat} [min-max]\n")
    print(f"{'figure':<22} {'imagetime':<32} {'baseline':<32} {'ratio':>7}  target")
    print(row("1 collection", res.collect.time_text(), res.plain_collect.time_text(),
              res.collect.time() / res.plain_collect.time(), 1.5, True))
    unused = res.unused_collect.time() - res.plain_collect.time()
    print(f"{'  installed, unused':<22} {res.unused_collect.time_text():<32} "
          f"{res.plain_collect.time_text():<32} "
          f"{res.unused_collect.time() / res.plain_collect.time():6.2f}x  (information: the "
          f"plugin loaded in a session without a model, {unused * 1000:+.0f} ms)")
    print(row("2 files+replay vs plain", res.free.time_text(), res.plain_run.time_text(),
              res.free.time() / res.plain_run.time(), 2.0, True))
    for label, series, what in (("  files, bare PNGs", res.bare, "measures pixel facts"),
                                ("  procedural+pixel", res.full, "draws and measures")):
        print(f"{label:<22} {series.time_text():<32} {res.plain_run.time_text():<32}"
              f" {series.time() / res.plain_run.time():6.2f}x  (information: {what})")
    print(row("3 resume vs collect", res.resume.time_text(), res.collect.time_text(),
              res.resume.time() / res.collect.time(), 1.5, True))
    print(f"{'  vs trivial tests':<22} {res.resume.time_text():<32} "
          f"{res.plain_trivial.time_text():<32} "
          f"{res.resume.time() / res.plain_trivial.time():6.2f}x  (information: plain pytest "
          f"running {bench.items} tests that do nothing takes "
          f"{res.plain_trivial.time() / res.plain_collect.time():.2f}x its collection)")
    # Reporting the items costs the replayed plain run what it adds to its own collection.
    floor = res.collect.time() + res.plain_replay.time() - res.plain_collect.time()
    replayed = res.plain_replay.time_text().strip()
    print(f"{'  floor':<22} {f'{floor:7.2f} s':<32} {res.collect.time_text():<32} "
          f"{floor / res.collect.time():6.2f}x  (information: the collection plus pytest "
          f"reporting {bench.items} replayed items, {replayed} for plain "
          f"ones: a resume whose lookups, records and report files cost nothing)")
    print(row(f"4 RSS {bench.items} vs {subset}", res.full.rss_text(), res.subset.rss_text(),
              res.full.rss() / res.subset.rss(), 1.2, True))
    print(row("5 -n 2 speed-up", res.xdist.time_text(), res.full.time_text(),
              res.full.time() / res.xdist.time(), 1.6, False))
    if found is not None:
        print(judge_row(found))
    generated = max(g for g, _ in res.resumed_counts)
    judged = max(j for _, j in res.resumed_counts)
    ok = "PASS" if generated == judged == 0 else "MISS"
    print(f"\nresume report: {generated} generated, {judged} judged (expected 0, 0) {ok}")
    print("baselines: 1 plain pytest (without this plugin) collecting parametrized tests, "
          "2 plain pytest running tests that write a 256 px PNG, 3 the collection, 4 the "
          "procedural run of a tenth of the cases, 5 the procedural run without -n")


def judge_row(found: Overlap) -> str:
    label = f"6 judge-bound N={found.n}"
    ideal = f"{found.ideal:7.2f} s (N x {found.latency:g} s / {found.concurrency})"
    return row(label, found.spread(), ideal, found.wall / found.ideal, 1.2, True)


def main() -> None:
    parser = argparse.ArgumentParser(description="pytest-imagetime harness overhead")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    parser.add_argument("--quick", action="store_true",
                        help="82 cases (constraints.yaml, kitchen.yaml) instead of all")
    parser.add_argument("--latency", type=float, default=1.0,
                        help="figure 6: seconds the local judge server takes per call")
    parser.add_argument("--concurrency", type=int, default=16,
                        help="figure 6: judge calls in flight")
    parser.add_argument("--no-judge", action="store_true", help="leave figure 6 out")
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter of the timed pytest processes (figures 1 to 5); "
                             "it must have pytest-imagetime and pytest-xdist installed")
    args = parser.parse_args()
    PYTHON[0] = args.python
    if not GNU_TIME.exists():
        sys.exit(f"peak RSS needs GNU time at {GNU_TIME}")
    with tempfile.TemporaryDirectory(prefix="imagetime-harness-") as tmp:
        bench = Bench(Path(tmp), args.quick)
        bench.prepare()
        res = Results()
        for _ in range(args.repeat):
            repetition(bench, res)
        found = None if args.no_judge else measure(args.latency, args.concurrency, 0,
                                                    args.repeat, args.quick)
        print_table(bench, res, args.repeat, found)


if __name__ == "__main__":
    main()
