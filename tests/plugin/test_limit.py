"""``--imagetime-limit N``: a smoke run of N cases that covers every domain, the same cases on
every machine, under xdist and before a shard splits them."""

from __future__ import annotations

import json
import random

import pytest

from pytest_imagetime.cases.inventory import domains
from pytest_imagetime.plugin.scheduling import limited_cases
from pytest_imagetime.report.json_report import validate_report

RUN = ["--imagetime-model=procedural", "--imagetime-judge=pixel", "--imagetime-size=128",
       "-p", "no:cacheprovider"]


def _collected(result: pytest.RunResult) -> list[str]:
    return [line.split("::")[1].split("[")[0] for line in result.outlines
            if "::" in line and line.endswith("[procedural]")]


def test_the_choice_is_round_robin_over_domains_and_independent_of_order() -> None:
    cases = {f"{d}-{n}": d for d in ("a", "b", "c") for n in range(4)}
    chosen = limited_cases(cases, 7)
    assert [cases[c] for c in chosen] == ["a", "b", "c", "a", "b", "c", "a"]
    shuffled = list(cases.items())
    random.Random(3).shuffle(shuffled)
    assert limited_cases(dict(shuffled), 7) == chosen
    assert limited_cases(cases, 100) == limited_cases(cases, 12)
    assert sorted(limited_cases(cases, 12)) == sorted(cases)


def test_a_limit_covers_every_domain(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--collect-only", "-q", "--imagetime-limit=25", *RUN)
    ids = _collected(result)
    assert len(ids) == 25 == len(set(ids))
    from pytest_imagetime.cases.loading import builtin_cases_dir, load_case_file

    by_id = {c.id: c.domain for f in sorted(builtin_cases_dir().glob("*.yaml"))
             for c in load_case_file(f)}
    assert {by_id[i] for i in ids} == set(domains())
    assert sorted(ids) == sorted(limited_cases(by_id, 25))
    again = pytester.runpytest("--collect-only", "-q", "--imagetime-limit=25", *RUN)
    assert _collected(again) == ids
    result.stdout.fnmatch_lines(["*25/*selected*"])


def test_a_limit_below_the_domains_warns(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--collect-only", "-q", "--imagetime-limit=3", *RUN)
    assert len(_collected(result)) == 3
    result.stdout.fnmatch_lines(["*LimitWarning: --imagetime-limit=3 covers 3 of the "
                                 "selection's 22 domains (their first cases)*"])


def test_the_limit_applies_before_the_shards(pytester: pytest.Pytester) -> None:
    whole = set(_collected(pytester.runpytest("--collect-only", "-q", "--imagetime-limit=22",
                                              *RUN)))
    shards = [set(_collected(pytester.runpytest("--collect-only", "-q", "--imagetime-limit=22",
                                                f"--imagetime-shard={k}/2", *RUN)))
              for k in (1, 2)]
    assert len(shards[0]) == len(shards[1]) == 11
    assert shards[0] | shards[1] == whole and not shards[0] & shards[1]


def test_a_limited_run_under_xdist_runs_the_same_cases_and_says_so(
        pytester: pytest.Pytester) -> None:
    expected = _collected(pytester.runpytest("--collect-only", "-q", "--imagetime-limit=23",
                                             *RUN))
    result = pytester.runpytest_subprocess("--imagetime-limit=23", "-n", "2", *RUN)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 23
    (path,) = (pytester.path / "reports").rglob("report.json")
    report = json.loads(path.read_text())
    validate_report(report)
    assert report["limit"] == 23
    assert sorted(i["case_id"] for i in report["items"]) == sorted(expected)


def test_a_bad_limit_is_refused(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--imagetime-limit=0", *RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--imagetime-limit=0: give a number of cases, an integer "
                                 "of 1 or more*"])


def test_the_shards_of_a_limited_run_merge_into_a_limited_report(
        pytester: pytest.Pytester) -> None:
    from pytest_imagetime.cli import main

    for k in (1, 2):
        pytester.runpytest("--imagetime-limit=22", f"--imagetime-shard={k}/2",
                           f"--imagetime-out=shard-{k}", *RUN)
    assert main(["merge", str(pytester.path / "shard-1"), str(pytester.path / "shard-2"),
                 "-o", str(pytester.path / "all"), "--partial"]) == 0
    (path,) = (pytester.path / "all").rglob("report.json")
    report = json.loads(path.read_text())
    validate_report(report)
    assert report["limit"] == 22 and len(report["items"]) == 22
    assert len({i["domain"] for i in report["items"]}) == 22
