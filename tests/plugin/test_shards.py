"""Shards of one run, on separate 'machines', merge into the report of an unsharded run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.cli import main
from pytest_imagetime.plugin.scheduling import shard_cases
from pytest_imagetime.plugin.shards import ACCEPTED, Shard, ShardError, parse_shard
from pytest_imagetime.report.json_report import validate_report

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


# ------------------------------------------------------------------ shards from the environment

SLURM = {"SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4",
         "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_STEP": "1"}


@given(low=st.integers(0, 50), count=st.integers(1, 64), data=st.data())
def test_a_slurm_array_numbers_its_shards_one_to_n(low: int, count: int,
                                                    data: st.DataObject) -> None:
    task = data.draw(st.integers(low, low + count - 1))
    environ = {"SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MIN": str(low),
               "SLURM_ARRAY_TASK_MAX": str(low + count - 1),
               "SLURM_ARRAY_TASK_COUNT": str(count)}
    shard = parse_shard("auto", environ)
    assert (shard.k, shard.n) == (task - low + 1, count)
    assert parse_shard(f"auto/{count}", environ) == shard


@pytest.mark.parametrize(("raw", "environ", "expected"), [
    ("2/8", {"SLURM_ARRAY_TASK_ID": "5", **SLURM}, Shard(2, 8)),  # explicit: env not read
    ("auto", {"SLURM_ARRAY_TASK_ID": "3", **SLURM},
     Shard(3, 4, "SLURM_ARRAY_TASK_ID=3 of 1-4")),
    ("auto/4", {"JOB_COMPLETION_INDEX": "0"}, Shard(1, 4, "JOB_COMPLETION_INDEX=0")),
    ("auto", {"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "3"},
     Shard(2, 3, "CI_NODE_INDEX=2 of CI_NODE_TOTAL=3")),
    # Slurm first: a Slurm job submitted from a CI job inherits the CI job's variables.
    ("auto", {"SLURM_ARRAY_TASK_ID": "4", **SLURM, "CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2",
              "JOB_COMPLETION_INDEX": "0"}, Shard(4, 4, "SLURM_ARRAY_TASK_ID=4 of 1-4")),
])
def test_shard_from_the_batch_system(raw: str, environ: dict[str, str],
                                     expected: Shard) -> None:
    assert parse_shard(raw, environ) == expected


@pytest.mark.parametrize(("raw", "environ", "message"), [
    ("auto", {}, "auto: no batch system's shard index in the environment "
                 "(SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX, CI_NODE_INDEX); give K/N"),
    ("auto", {"JOB_COMPLETION_INDEX": "2"}, "JOB_COMPLETION_INDEX=2 gives this shard's index "
     "but not how many shards there are: give --imagetime-shard=auto/N"),
    ("auto/8", {"SLURM_ARRAY_TASK_ID": "3", **SLURM},
     "auto/8 names 8 shards, but SLURM_ARRAY_TASK_ID=3 of 1-4 says 4"),
    ("auto/2", {"JOB_COMPLETION_INDEX": "2"}, "JOB_COMPLETION_INDEX=2 is shard 3 of 2, "
     "outside 1..2"),
    ("auto", {"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_MIN": "1",
              "SLURM_ARRAY_TASK_MAX": "7", "SLURM_ARRAY_TASK_COUNT": "4",
              "SLURM_ARRAY_TASK_STEP": "2"},
     "the Slurm array 1-7 (4 tasks, step 2) has gaps, so its task ids cannot number the "
     "shards: submit --array=1-4, or give K/N"),
    ("auto", {"CI_NODE_INDEX": "x"}, "CI_NODE_INDEX='x' in the environment is not an integer"),
    ("auto/0", {}, ACCEPTED),
    ("0/4", {}, ACCEPTED),
    ("3", {}, ACCEPTED),
])
def test_bad_shards_say_why(raw: str, environ: dict[str, str], message: str) -> None:
    with pytest.raises(ShardError) as caught:
        parse_shard(raw, environ)
    assert str(caught.value) == message


def test_auto_shard_in_a_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    args = ["constraints.yaml", "--imagetime-model=procedural", "--imagetime-size=128"]
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "2")
    for name, value in SLURM.items():
        monkeypatch.setenv(name, value)
    pytester.runpytest(*args, "--imagetime-shard=auto", "--imagetime-out=auto"
                       ).assert_outcomes(passed=6, deselected=18)
    pytester.runpytest(*args, "--imagetime-shard=2/4", "--imagetime-out=explicit"
                       ).assert_outcomes(passed=6, deselected=18)
    auto = _report(pytester.path / "auto/procedural/pixel/report.json")
    explicit = _report(pytester.path / "explicit/procedural/pixel/report.json")
    assert auto["manifest"]["shard"] == explicit["manifest"]["shard"] == "2/4"
    assert auto["manifest"]["shard_source"] == "SLURM_ARRAY_TASK_ID=2 of 1-4"
    assert explicit["manifest"]["shard_source"] is None
    assert _comparable(auto) == _comparable(explicit)
    assert auto["coverage"]["shard"] == "2/4" and not auto["coverage"]["complete"]
    assert (auto["coverage"]["scope"], auto["coverage"]["missing"]) == (6, 0)
    result = pytester.runpytest(*args, "--imagetime-shard=auto/3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --imagetime-shard=auto/3: auto/3 names 3 shards, but "
                                 "SLURM_ARRAY_TASK_ID=2 of 1-4 says 4"])


# ------------------------------------------------------------------ merging a set of shards


@pytest.fixture
def four_shards(pytester: pytest.Pytester) -> list[str]:
    """Shards 1-4 of constraints.yaml (6 cases each), the last one run under -n 2."""
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    args = ["constraints.yaml", "--imagetime-model=procedural", "--imagetime-size=128"]
    for k in range(1, 5):
        workers = ["-n", "2"] if k == 4 else []
        pytester.runpytest(*args, f"--imagetime-shard={k}/4", f"--imagetime-out=shard-{k}",
                           *workers).assert_outcomes(passed=6)
    return [f"shard-{k}" for k in range(1, 5)]


def test_merge_refuses_a_missing_or_duplicated_shard(
        pytester: pytest.Pytester, four_shards: list[str],
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["merge", *four_shards[:3], "-o", "merged"]) == 1
    err = capsys.readouterr().err
    assert "procedural/pixel: shard 4/4 missing (given: 1/4, 2/4, 3/4)" in err
    assert "--partial merges them as a partial run" in err
    assert not (pytester.path / "merged").exists()

    shutil.copytree(pytester.path / "shard-1", pytester.path / "shard-1-again")
    assert main(["merge", *four_shards, "shard-1-again", "--partial", "-o", "merged"]) == 1
    err = capsys.readouterr().err
    assert "procedural/pixel: shard 1/4 is given 2 times: shard-1/procedural/pixel/report.json, " \
           "shard-1-again/procedural/pixel/report.json; give each shard once" in err

    assert main(["merge", *four_shards[:3], "--partial", "-o", "partial"]) == 0
    partial = _report(pytester.path / "partial/procedural/pixel/report.json")
    assert partial["coverage"]["complete"] is False
    assert (partial["coverage"]["cases"], partial["coverage"]["missing"]) == (18, 6)
    assert main(["summary", "partial/procedural/pixel"]) == 0
    out = capsys.readouterr().out
    assert "18/24 partial" in out
    assert "procedural: PARTIAL: 18 of the 24 cases of suite constraints.yaml" in out

    assert main(["merge", *four_shards, "-o", "merged"]) == 0
    merged = _report(pytester.path / "merged/procedural/pixel/report.json")
    assert merged["coverage"]["complete"] and merged["coverage"]["cases"] == 24


def test_merge_refuses_shards_of_a_selection(pytester: pytest.Pytester,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    args = ["constraints.yaml", "--imagetime-model=procedural", "--imagetime-size=128"]
    for k in (1, 2):
        pytester.runpytest(*args, f"--imagetime-shard={k}/2", f"--imagetime-out=s{k}")
    # A shard is a share of the suite: a -k rerun of shard 1 runs some of the same cases.
    pytester.runpytest(*args, "-k", "cup", "--imagetime-shard=1/2", "--imagetime-out=k1")
    k1 = _report(pytester.path / "k1/procedural/pixel/report.json")
    s1 = _report(pytester.path / "s1/procedural/pixel/report.json")
    assert {i["case_id"] for i in k1["items"]} < {i["case_id"] for i in s1["items"]}
    assert main(["merge", "k1", "s2", "-o", "merged"]) == 1
    err = capsys.readouterr().err
    assert (f"procedural/pixel: shard 1/2 (k1/procedural/pixel/report.json) covers "
            f"{len(k1['items'])} of its 12 cases (a -k/-m selection, or a run that stopped "
            f"early)") in err


def test_merge_finds_shards_moved_elsewhere(pytester: pytest.Pytester,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """CI artifacts are downloaded elsewhere than where their shard ran."""
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    args = ["constraints.yaml", "--imagetime-model=procedural", "--imagetime-size=128"]
    for k in (1, 2):
        pytester.runpytest(*args, f"--imagetime-shard={k}/2", f"--imagetime-out=ran/s{k}")
    shutil.move(pytester.path / "ran", pytester.path / "downloaded")
    assert main(["merge", "downloaded/s1", "downloaded/s2", "-o", "merged"]) == 0
    merged = _report(pytester.path / "merged/procedural/pixel/report.json")
    assert len(merged["items"]) == 24
    for item in merged["items"]:
        assert Path(item["image"]).is_file() and Path(item["judgment"]).is_file()
    gone = next((pytester.path / "downloaded/s2/procedural/images").glob("*.png"))
    gone.unlink()
    assert main(["merge", "downloaded/s1", "downloaded/s2", "-o", "again"]) == 1
    assert f"its image {gone.relative_to(pytester.path)} is not there" in capsys.readouterr().err


def test_merge_names_a_report_that_does_not_say_what_it_covers(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    pytester.runpytest("constraints.yaml", "--imagetime-model=procedural",
                       "--imagetime-size=128", "--imagetime-shard=1/1", "--imagetime-out=old")
    path = pytester.path / "old/procedural/pixel/report.json"
    report = json.loads(path.read_text())
    del report["coverage"]
    path.write_text(json.dumps(report))
    assert main(["merge", "old", "-o", "merged"]) == 1
    assert ("old/procedural/pixel/report.json: written before reports said which cases they "
            "cover") in capsys.readouterr().err
