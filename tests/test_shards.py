"""Shards of one run, on separate 'machines', merge into the report of an unsharded run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cases import builtin_cases_dir
from pytest_imagetime.cli import main
from pytest_imagetime.report.json_report import validate_report
from pytest_imagetime.scheduling import shard_cases

MACHINE_FIELDS = ("run_dir", "image", "judgment", "generated", "judged", "generation_s",
                  "judge_s")


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    validate_report(report)
    return report


def _comparable(report: dict[str, Any]) -> tuple[Any, ...]:
    items = [{k: v for k, v in i.items() if k not in MACHINE_FIELDS} for i in report["items"]]
    return report["aggregate"], report["errors"], items, report["manifest"]["cases"]


def test_shards_are_balanced_disjoint_and_complete() -> None:
    ids = [f"case-{i}" for i in range(23)]
    shards = [shard_cases(ids, (k, 4)) for k in range(1, 5)]
    assert set().union(*shards) == set(ids)
    assert sum(len(s) for s in shards) == 23
    assert max(len(s) for s in shards) - min(len(s) for s in shards) <= 1
    assert shard_cases(list(reversed(ids)), (2, 4)) == shards[1]


def test_merged_shards_give_the_unsharded_report(pytester: pytest.Pytester) -> None:
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    args = ["constraints.yaml", "--imagetime-model=procedural",
            "--imagetime-model=procedural:shuffled", "--imagetime-size=128"]
    pytester.runpytest(*args, "--imagetime-out=whole").assert_outcomes(passed=24, failed=24)
    counts = []
    for k in (1, 2, 3):
        result = pytester.runpytest(*args, f"--imagetime-shard={k}/3",
                                    f"--imagetime-out=shard-{k}")
        outcomes = result.parseoutcomes()
        counts.append(outcomes["passed"] + outcomes["failed"])
        assert outcomes["passed"] == outcomes["failed"]  # both models of a case together
    assert counts == [16, 16, 16]
    assert main(["merge", "shard-1", "shard-2", "shard-3", "-o", "merged"]) == 0
    for run in ("procedural/pixel", "procedural-shuffled/pixel"):
        merged = _report(pytester.path / "merged" / run / "report.json")
        whole = _report(pytester.path / "whole" / run / "report.json")
        assert _comparable(merged) == _comparable(whole)
        assert merged["coverage"] == whole["coverage"]
        assert merged["coverage"]["complete"] and merged["coverage"]["cases"] == 24
        assert [m["shard"] for m in merged["manifest"]["merged_from"]] == ["1/3", "2/3", "3/3"]
        for item in merged["items"]:
            assert Path(item["image"]).is_file() and Path(item["judgment"]).is_file()
            assert str(pytester.path / "merged") in item["image"]
    assert (pytester.path / "merged" / "junit.xml").is_file()


def test_merge_refuses_shards_of_different_runs(pytester: pytest.Pytester,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    base = ["constraints.yaml", "--imagetime-model=procedural", "--imagetime-size=128"]
    pytester.runpytest(*base, "--imagetime-shard=1/2", "--imagetime-out=a")
    pytester.runpytest(*base, "--imagetime-shard=2/2", "--imagetime-out=b", "--imagetime-seed=7")
    assert main(["merge", "a", "b", "-o", "merged"]) == 1
    err = capsys.readouterr().err
    assert "procedural/pixel: seed differs between" in err
    assert main(["merge", "a", "nope", "-o", "merged"]) == 2
    assert "not a directory: nope" in capsys.readouterr().err


def test_bad_shard_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--imagetime-model=procedural", "--imagetime-shard=4/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --imagetime-shard=4/3: give K/N with 1 <= K <= N "
                                 "(e.g. 2/8), or auto*"])
