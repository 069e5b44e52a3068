"""Whole runs with the vlm judge against a local Chat Completions server, through pytester."""

from __future__ import annotations

import json
import re
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, write_case_file
from tests.fake_openai import ChatServer, ServerState, chat_server

KEY = "sk-run-test-KEY-9f8e7d6c5b4a"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState()) as running:
        yield running


@pytest.fixture
def judge_env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
              server: ChatServer) -> ChatServer:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return server


def _benchmark_cases(pytester: pytest.Pytester) -> None:
    """The 82 cases of the first two domains, as a team would copy them."""
    for name in ("constraints.yaml", "kitchen.yaml"):
        shutil.copy(builtin_cases_dir() / name, pytester.path / name)


def _args(*extra: str) -> list[str]:
    return ["constraints.yaml", "kitchen.yaml", "--imagetime-model=procedural",
            "--imagetime-size=128", "--imagetime-judge-price=2,8", *extra]


def _report(out: Path, run: str = "procedural/vlm") -> dict[str, Any]:
    report: dict[str, Any] = json.loads((out / run / "report.json").read_text())
    validate_report(report)
    return report


def _scores(report: dict[str, Any]) -> dict[str, Any]:
    return {i["key"]: (i["status"], i["scores"], i["labels"]) for i in report["items"]}


def test_vlm_is_the_default_and_a_missing_key_stops_before_generating(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --imagetime-judge=vlm: the vlm judge needs an API key "
                                 "in the environment variable OPENAI_API_KEY*"
                                 "--imagetime-judge=pixel"])
    assert not (pytester.path / "reports").exists()


def test_a_run_records_every_judgment_with_its_costs(pytester: pytest.Pytester,
                                                     judge_env: ChatServer) -> None:
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
                                "--imagetime-judge-price=2,8", "--imagetime-judge-model=judge-x")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "procedural * vlm (judge-x)",
        "procedural: judge cost $0.0070 ($0.0070 per case), spent this session $0.0070, "
        "prompt cache 0.0% of 1500 input tokens",
    ])
    report = _report(pytester.path / "reports")
    assert report["aggregate"]["cost_usd"] == pytest.approx(0.007)
    record = json.loads(next((pytester.path / "reports").rglob("judgments/*.json")).read_text())
    judgment = record["judgment"]
    assert judgment["judge_model"] == "judge-x"
    assert judgment["prompt_version"].startswith("imagetime-judge-prompt/")
    assert judgment["rubric_version"].startswith("imagetime-rubric/")
    assert judgment["tokens_in"] == 1500 and judgment["tokens_out"] == 500
    assert judgment["raw"]["content"].startswith("{") and judgment["date"]
    assert judgment["latency_s"] >= 0


def test_random_faults_end_judged_or_as_errors_with_reasons(pytester: pytest.Pytester,
                                                            judge_env: ChatServer) -> None:
    _benchmark_cases(pytester)
    clean = pytester.runpytest(*_args("--imagetime-out=clean"))
    clean.assert_outcomes(passed=82)
    judge_env.state.fault_rate = 0.2
    judge_env.state.timeout_sleep_s = 0.5
    flaky = pytester.runpytest(*_args("--imagetime-out=flaky", "--imagetime-judge-retries=6",
                                      "--imagetime-judge-reasks=6",
                                      "--imagetime-judge-timeout=0.3"))
    flaky.assert_outcomes(passed=82)
    assert sum(judge_env.state.faults_served.values()) > 10
    assert _scores(_report(pytester.path / "flaky")) == _scores(
        _report(pytester.path / "clean"))
    strict = pytester.runpytest(*_args("--imagetime-out=strict", "--imagetime-judge-retries=0",
                                       "--imagetime-judge-reasks=0",
                                       "--imagetime-judge-timeout=0.3"))
    outcomes = strict.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("errors", 0) == 82
    assert outcomes.get("errors", 0) > 0
    report = _report(pytester.path / "strict")
    assert report["aggregate"]["errors"] == outcomes["errors"]
    for item in report["items"]:
        if item["status"] == "error":
            assert item["error"].startswith("judge vlm failed on ")
            assert item["overall"] is None
    assert report["aggregate"]["judged"] == outcomes.get("passed", 0)


def test_killed_run_resumes_judging_only_what_is_missing(pytester: pytest.Pytester,
                                                         judge_env: ChatServer) -> None:
    _benchmark_cases(pytester)
    judge_env.state.latency_s = 0.05
    proc = pytester.popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           *_args("--imagetime-judge-concurrency=2")])
    judgments = pytester.path / "reports" / "procedural" / "vlm" / "judgments"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(list(judgments.glob("*.json"))) < 30:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stored = len(list(judgments.glob("*.json")))
    assert 30 <= stored < 82
    # A kill may leave a temporary file behind, never a half-written record.
    for record in judgments.glob("*.json"):
        json.loads(record.read_text())
    judge_env.state.latency_s = 0.0
    before = len(judge_env.state.requests)
    pytester.runpytest(*_args()).assert_outcomes(passed=82)
    assert len(judge_env.state.requests) - before == 82 - stored
    pytester.runpytest(*_args("--imagetime-out=uninterrupted")).assert_outcomes(passed=82)
    assert _scores(_report(pytester.path / "reports")) == _scores(
        _report(pytester.path / "uninterrupted"))


def test_the_key_never_appears_in_anything_a_run_writes(pytester: pytest.Pytester,
                                                       judge_env: ChatServer) -> None:
    write_case_file(pytester.path / "k.yaml", [case_dict(), case_dict(
        "kitchen-pour-water-2", variant=2)])
    judge_env.state.fault_queue = ["500", "500"]
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
                                "--imagetime-judge-retries=1", "--junitxml=junit.xml", "-rA",
                                "--imagetime-judge-concurrency=1")
    result.assert_outcomes(passed=1, errors=1)
    assert KEY not in result.stdout.str() + result.stderr.str()
    for path in pytester.path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_pixel_findings_cap_what_the_vlm_missed(pytester: pytest.Pytester,
                                                judge_env: ChatServer) -> None:
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural:copied",
                                "--imagetime-size=128")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cap copied-phases*copied_phases*"])
    item = _report(pytester.path / "reports", "procedural-copied/vlm")["items"][0]
    assert item["scores"]["D9"] == 2 and item["scores"]["C4"] == 2
    assert "copied_phases" in item["labels"]
    (cap,) = item["caps"]
    assert cap.startswith("copied-phases: phases are copied")
    assert "labels: copied_phases; lowered " in cap
    assert re.search(r"D9 \d+->2", cap)


def test_replay_rescores_stored_judgments_without_calls(pytester: pytest.Pytester,
                                                        judge_env: ChatServer) -> None:
    _benchmark_cases(pytester)
    pytester.runpytest(*_args()).assert_outcomes(passed=82)
    calls = len(judge_env.state.requests)
    source = pytester.path / "reports" / "procedural" / "vlm"
    replay = pytester.runpytest(*_args(f"--imagetime-judge=replay:{source}"))
    replay.assert_outcomes(passed=82)
    assert len(judge_env.state.requests) == calls
    replayed = _report(pytester.path / "reports", "procedural/replay")
    assert _scores(replayed) == _scores(_report(pytester.path / "reports"))
    assert replayed["manifest"]["judge"]["config"]["judge_model"] == "gpt-5.5"
    missing = pytester.runpytest("constraints.yaml", "--imagetime-model=procedural:copied",
                                 "--imagetime-size=128", f"--imagetime-judge=replay:{source}")
    missing.assert_outcomes(errors=24)
    missing.stdout.fnmatch_lines(["*is for another image than*replay needs the same sheets*"])


def test_dry_run_estimates_and_runs_nothing(pytester: pytest.Pytester,
                                            judge_env: ChatServer) -> None:
    _benchmark_cases(pytester)
    dry = pytester.runpytest(*_args("--imagetime-dry-run", "-n", "2"))
    dry.stdout.fnmatch_lines([
        "*ImageTime dry run*",
        "run*items*to judge*tokens in*tokens out*est. cost",
        "procedural | vlm*82*82*",
        "total: $*; nothing was generated or judged",
    ])
    assert dry.ret == pytest.ExitCode.OK  # a dry run that printed its estimate succeeded
    assert not (pytester.path / "reports").exists()
    assert judge_env.state.requests == []
    pytester.runpytest(*_args()).assert_outcomes(passed=82)
    again = pytester.runpytest(*_args("--imagetime-dry-run"))
    again.stdout.fnmatch_lines(["procedural | vlm*82*0*0*0*$0.00"])
    unknown = pytester.runpytest("kitchen.yaml", "--imagetime-model=procedural",
                                 "--imagetime-dry-run", "--imagetime-judge-model=mystery-vlm")
    unknown.stdout.fnmatch_lines(["total: unknown (no price for judge model 'mystery-vlm'*"])


def test_max_cost_stops_new_calls(pytester: pytest.Pytester, judge_env: ChatServer) -> None:
    _benchmark_cases(pytester)
    result = pytester.runpytest("constraints.yaml", "--imagetime-model=procedural",
                                "--imagetime-size=128", "--imagetime-judge-price=2,8",
                                "--imagetime-max-cost=0.02", "--imagetime-judge-concurrency=1")
    result.assert_outcomes(passed=3, errors=21)
    result.stdout.fnmatch_lines(["*not judged: the judge budget is spent ($0.0210 of $0.0200; "
                                 "--imagetime-max-cost)*"])
    assert len(judge_env.state.requests) == 3
    no_price = pytester.runpytest("constraints.yaml", "--imagetime-model=procedural",
                                  "--imagetime-max-cost=1", "--imagetime-judge-model=mystery")
    assert no_price.ret == pytest.ExitCode.USAGE_ERROR
    no_price.stderr.fnmatch_lines(["*--imagetime-max-cost needs the judge's price*"
                                   "--imagetime-judge-price=IN,OUT*"])


def test_canaries_are_judged_and_reported(pytester: pytest.Pytester,
                                          judge_env: ChatServer) -> None:
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
                                "--imagetime-canaries", "--imagetime-judge=pixel")
    result.assert_outcomes(passed=1)
    canaries = _report(pytester.path / "reports", "procedural/pixel")["canaries"]
    assert len(canaries) == 6
    overall = {(c["case_id"].split("-")[0], c["variant"]): c["overall"] for c in canaries}
    for domain in ("kitchen", "constraints"):
        assert overall[(domain, "good")] > overall[(domain, "copied")] + 2
        assert overall[(domain, "good")] > overall[(domain, "shuffled")] + 2
    pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
                       "--imagetime-canaries").assert_outcomes(passed=1)
    assert len(judge_env.state.requests) == 7  # six canaries and one item
    vlm_canaries = _report(pytester.path / "reports")["canaries"]
    assert all(c["judge_model"] == "gpt-5.5" for c in vlm_canaries)


def test_judging_runs_concurrently_and_under_xdist(pytester: pytest.Pytester,
                                                   judge_env: ChatServer) -> None:
    _benchmark_cases(pytester)
    # Long enough that generation (tens of ms a sheet, more on a busy machine) keeps ahead.
    judge_env.state.latency_s = 0.4
    serial = pytester.runpytest("constraints.yaml", "--imagetime-model=procedural",
                                "--imagetime-size=128", "--imagetime-judge-concurrency=4",
                                "--imagetime-out=serial")
    serial.assert_outcomes(passed=24)
    assert judge_env.state.max_in_flight == 4
    judge_env.state.max_in_flight = 0
    parallel = pytester.runpytest("constraints.yaml", "--imagetime-model=procedural",
                                  "--imagetime-size=128", "--imagetime-judge-concurrency=4",
                                  "--imagetime-out=parallel", "-n", "2")
    parallel.assert_outcomes(passed=24)
    # Each worker keeps its own four in flight; how much the two overlap depends on how
    # fast the workers start, so only the per-worker bound is asserted here.
    assert judge_env.state.max_in_flight >= 4
    assert _report(pytester.path / "serial")["aggregate"] == _report(
        pytester.path / "parallel")["aggregate"]


def test_missing_openai_package_is_a_usage_error_with_the_install_command(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setitem(sys.modules, "openai", None)  # as if it were not installed
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --imagetime-judge=vlm: the vlm judge needs the openai "
                                 "package: pip install 'pytest-imagetime[openai]'; to score "
                                 "offline use --imagetime-judge=pixel"])
