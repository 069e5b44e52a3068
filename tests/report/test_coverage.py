"""A subset never silently replaces a full run: reports say which cases of which suite they
cover, a rerun of a subset keeps the run directory's other current items, and every reader
(summary, HTML leaderboard, figures' labels, gate, compare, merge) shows a partial run as
partial."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.cli import main
from pytest_imagetime.report.coverage import (
    Suite,
    case_set_difference,
    coverage_json,
    coverage_text,
    kept_items,
)
from pytest_imagetime.report.figures import run_labels
from pytest_imagetime.report.json_report import validate_report

RUN = Path("procedural/pixel/report.json")
CUP = "constraints-do-not-touch-cup-1"  # one of the 24 cases of constraints.yaml
EARLIER = 2 + 58  # the packaged cases "-k 'crack-egg or nature'" selects


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")


def _run(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    return pytester.runpytest("constraints.yaml", "--imagetime-model=procedural",
                              "--imagetime-size=128", *extra)


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    validate_report(report)
    return report


def _junit_cases(path: Path) -> int:
    return len(ET.parse(path).getroot().findall(".//testcase"))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_subset_rerun_updates_the_full_report(pytester: pytest.Pytester,
                                               workers: list[str]) -> None:
    _run(pytester, *workers).assert_outcomes(passed=24)
    full = _report(pytester.path / "reports" / RUN)
    assert full["coverage"] == {
        "suite": {"name": "constraints.yaml", "cases": 24, "sha256": full["coverage"]["suite"]
                  ["sha256"]},
        "shard": None, "scope": 24, "cases": 24, "missing": 0, "outside": 0,
        "complete": True, "ran": 24, "kept": 0}

    rerun = _run(pytester, "-k", "cup", "--imagetime-rejudge", *workers)
    rerun.assert_outcomes(passed=4)
    rerun.stdout.fnmatch_lines(["procedural*24 24/24 *",
                                "procedural: 4 items ran in this session; 20 kept from this "
                                "directory's last report"])
    report = _report(pytester.path / "reports" / RUN)
    coverage = report["coverage"]
    assert (coverage["cases"], coverage["complete"], coverage["ran"], coverage["kept"]) == (
        24, True, 4, 20)
    assert report["aggregate"]["n"] == 24
    assert report["manifest"]["cases"] == full["manifest"]["cases"]
    assert [i["key"] for i in report["items"]] == [i["key"] for i in full["items"]]
    # The scores are the full run's; what this session did not judge it did not pay for.
    assert report["aggregate"]["overall"] == pytest.approx(full["aggregate"]["overall"])
    assert sum(i["judged"] for i in report["items"]) == 4
    # The JUnit file holds this session's tests, as pytest's own summary does.
    assert _junit_cases(pytester.path / "reports" / "junit.xml") == 4


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_first_subset_is_a_partial_report(pytester: pytest.Pytester,
                                           workers: list[str]) -> None:
    result = _run(pytester, "-k", "cup", *workers)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([
        "procedural*4 4/24 partial *",
        "procedural: PARTIAL: 4 of the 24 cases of suite constraints.yaml; not a benchmark "
        "result (docs/shards.md)"])
    report = _report(pytester.path / "reports" / RUN)
    assert report["coverage"]["complete"] is False
    assert (report["coverage"]["cases"], report["coverage"]["missing"]) == (4, 20)
    assert main(["summary", str(pytester.path / "reports" / RUN.parent)]) == 0


def test_items_of_another_run_are_not_kept(pytester: pytest.Pytester) -> None:
    _run(pytester).assert_outcomes(passed=24)
    # Another pass threshold makes other outcomes: the earlier items are not this run's.
    _run(pytester, "-k", "cup", "--imagetime-pass-threshold=4").assert_outcomes(
        passed=4, deselected=20)
    report = _report(pytester.path / "reports" / RUN)
    assert (report["coverage"]["cases"], report["coverage"]["complete"]) == (4, False)


def test_a_case_whose_text_changed_is_not_kept(pytester: pytest.Pytester) -> None:
    _run(pytester).assert_outcomes(passed=24)
    cases = pytester.path / "constraints.yaml"
    text = cases.read_text()
    cases.write_text(text.replace("a white ceramic cup filled almost",
                                  "a white porcelain cup filled almost"))
    _run(pytester, "-k", "box").assert_outcomes(passed=4, deselected=20)
    report = _report(pytester.path / "reports" / RUN)
    assert CUP not in {i["case_id"] for i in report["items"]}
    assert (report["coverage"]["cases"], report["coverage"]["missing"]) == (23, 1)
    assert report["coverage"]["complete"] is False
    # Deleting a kept item's judgment drops it too: the next run redoes it.
    kept = next(i for i in report["items"] if not i["judged"])
    Path(kept["judgment"]).unlink()
    _run(pytester, "-k", "box").assert_outcomes(passed=4, deselected=20)
    again = _report(pytester.path / "reports" / RUN)
    assert kept["case_id"] not in {i["case_id"] for i in again["items"]}


def test_the_packaged_suite_is_named(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--imagetime-model=procedural", "--imagetime-size=128",
                                "-k", "crack-egg")
    result.assert_outcomes(passed=2, deselected=748)
    report = _report(pytester.path / "reports" / RUN)
    assert report["coverage"]["suite"]["name"] == "imagetime"
    assert (report["coverage"]["cases"], report["coverage"]["suite"]["cases"]) == (2, 750)
    assert coverage_text(report) == "2/750 partial"


@pytest.mark.parametrize("selection", [["kitchen.yaml::kitchen-crack-egg-1[procedural]"],
                                       ["kitchen.yaml"]], ids=["node-id", "file"])
def test_a_packaged_file_or_case_rerun_keeps_the_whole_suite_s_report(
        pytester: pytest.Pytester, selection: list[str]) -> None:
    """The rerun-alone line of a failed item names its packaged file: like -k it selects
    from the benchmark, so the report keeps the suite and the items of the other files."""
    _run_packaged = ["--imagetime-model=procedural", "--imagetime-size=128"]
    pytester.runpytest(*_run_packaged, "-k", "crack-egg or nature").assert_outcomes(
        passed=EARLIER, deselected=750 - EARLIER)
    before = _report(pytester.path / "reports" / RUN)
    pytester.runpytest(*selection, *_run_packaged).assert_outcomes(
        passed=1 if "::" in selection[0] else 58)
    report = _report(pytester.path / "reports" / RUN)
    assert report["coverage"]["suite"] == before["coverage"]["suite"]
    assert report["coverage"]["suite"]["name"] == "imagetime"
    kept = {i["case_id"] for i in before["items"]} - {i["case_id"] for i in report["items"]}
    assert kept == set()  # nothing of the earlier run dropped


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_gate_refuses_a_subset_against_a_full_baseline(pytester: pytest.Pytester,
                                                          workers: list[str]) -> None:
    _run(pytester, "--imagetime-baseline=baseline", "--imagetime-update-baseline"
         ).assert_outcomes(passed=24)
    result = _run(pytester, "-k", "cup", "--imagetime-out=candidate",
                  "--imagetime-baseline=baseline", "--imagetime-allow-judge-change", *workers)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "gate BREACHED: procedural | pixel",
        "  not comparable: different cases: the baseline covers 24 cases (24/24), this run 4 "
        "(4/24 partial); 20 of the baseline's are not in this run (e.g. *): gate runs of the "
        "same cases (the full suite, or a baseline made from the same selection)"])
    report = _report(pytester.path / "candidate" / RUN)
    assert report["gate"]["breached"]
    # The same verdict on stored runs; a baseline of the same selection gates fine.
    assert main(["compare", "baseline", "candidate"]) == 1
    _run(pytester, "-k", "cup", "--imagetime-out=subset").assert_outcomes(passed=4,
                                                                          deselected=20)
    assert main(["compare", "subset", "candidate"]) == 0


def test_the_leaderboard_ranks_complete_runs_only(pytester: pytest.Pytester) -> None:
    _run(pytester).assert_outcomes(passed=24)
    _run(pytester, "-k", "cup", "--imagetime-out=subset").assert_outcomes(passed=4,
                                                                          deselected=20)
    assert main(["report", "reports", "subset", "-o", "html"]) == 0
    index = (pytester.path / "html" / "index.html").read_text()
    table = index.split('id="leaderboard"')[1].split("</table>")[0]
    rows = [r for r in table.split("<tr") if "run-" in r]
    assert len(rows) == 2
    assert rows[0].startswith("><td>1</td>") and "24/24" in rows[0]
    assert rows[1].startswith(' class="partial-run"><td>–</td>') and "4/24 partial" in rows[1]
    assert 'id="unranked"' in index
    pages = sorted((pytester.path / "html").glob("run-*.html"))
    assert sum('id="coverage"' in p.read_text() for p in pages) == 1
    reports = [_report(pytester.path / d / RUN) for d in ("reports", "subset")]
    assert run_labels(reports) == ["procedural", "procedural (4/24 partial)"]


# ------------------------------------------------------------------ invariants

CASES = [f"case-{i:02d}" for i in range(30)]


def _items(ids: set[str]) -> list[dict[str, Any]]:
    return [{"key": f"{c}[m]", "case_id": c, "case_sha256": f"h-{c}", "status": "error",
             "image": None, "judgment": None} for c in sorted(ids)]


@given(covered=st.sets(st.sampled_from(CASES)),
       shard=st.none() | st.integers(1, 4).map(lambda k: (k, 4)))
def test_coverage_counts_add_up(covered: set[str], shard: tuple[int, int] | None) -> None:
    suite = Suite("s", {c: f"h-{c}" for c in CASES})
    coverage = coverage_json(_items(covered), suite, shard, len(covered))
    scope = suite.scope(shard)
    assert coverage["cases"] == len(covered)
    assert coverage["missing"] == len(scope - covered)
    assert coverage["complete"] == (covered == set(CASES))
    assert coverage["scope"] == len(scope)
    assert coverage["ran"] + coverage["kept"] == len(covered)


@given(before=st.sets(st.sampled_from(CASES)), ran=st.sets(st.sampled_from(CASES)),
       scope=st.sets(st.sampled_from(CASES)))
def test_kept_items_are_current_and_not_rerun(before: set[str], ran: set[str],
                                              scope: set[str]) -> None:
    manifest = {"model": "m", "judge": "j", "setting": "prompt-only", "size": 64, "seed": 0,
                "pass_threshold": 5.0, "judge_repeats": 1, "rubric_version": "r"}
    previous = {"manifest": manifest, "items": _items(before)}
    kept = kept_items(previous, manifest, {c: f"h-{c}" for c in scope},
                      (f"{c}[m]" for c in ran))
    assert {i["case_id"] for i in kept} == (before & scope) - ran
    assert not any(i["judged"] or i["generated"] for i in kept)
    assert kept_items(previous, {**manifest, "seed": 1}, {c: f"h-{c}" for c in scope},
                      ()) == []


@given(a=st.sets(st.sampled_from(CASES), min_size=1), b=st.sets(st.sampled_from(CASES),
                                                                min_size=1))
def test_only_the_same_cases_compare(a: set[str], b: set[str]) -> None:
    differs = case_set_difference({"items": _items(a)}, {"items": _items(b)})
    assert (differs is None) == (a == b)
