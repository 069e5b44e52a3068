"""Batch judging (``--imagetime-judge-batch``) through the real ``openai`` client against a
local server that speaks the Files and Batch APIs (``tests/fake_batch.py``)."""

from __future__ import annotations

import json
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.judges import batch as batch_module
from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, write_case_file
from tests.fake_batch import BatchServer, BatchState, batch_server

KEY = "sk-batch-test-KEY-77aa55cc33ee"
# One answer's usage from the test server, and what it costs gpt-5.5 in a batch and not.
ANSWER_IN, ANSWER_OUT = 1500, 500
BATCH_COST = (ANSWER_IN * 2.5 + ANSWER_OUT * 15.0) / 1e6
SYNC_COST = (ANSWER_IN * 5.0 + ANSWER_OUT * 30.0) / 1e6


@pytest.fixture
def server() -> Iterator[BatchServer]:
    with batch_server(BatchState(polls_to_finish=2, key=KEY)) as running:
        yield running


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch, server: BatchServer) -> BatchServer:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return server


def _cases(pytester: pytest.Pytester, count: int = 3) -> None:
    write_case_file(pytester.path / "k.yaml", [
        case_dict(f"kitchen-pour-water-{n + 1}", variant=n % 2 + 1) for n in range(count)])


def _args(*extra: str) -> list[str]:
    return ["k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
            "--imagetime-judge-batch", "--imagetime-judge-batch-poll=0.01", *extra]


def _report(pytester: pytest.Pytester, out: str = "reports") -> dict[str, Any]:
    report: dict[str, Any] = json.loads(
        (pytester.path / out / "procedural/vlm/report.json").read_text())
    validate_report(report)
    return report


def _chat_calls(server: BatchServer) -> int:
    return sum(path.endswith("/chat/completions") for path in server.state.paths)


def _input_lines(server: BatchServer, batch_id: str) -> list[dict[str, Any]]:
    upload = server.state.uploads[server.state.batches[batch_id]["input_file_id"]]
    return [json.loads(line) for line in upload["data"].decode().splitlines()]


def test_a_batch_run_judges_every_item_at_the_batch_price(pytester: pytest.Pytester,
                                                         judge_env: BatchServer) -> None:
    _cases(pytester)
    result = pytester.runpytest(*_args())
    result.assert_outcomes(passed=3)
    state = judge_env.state
    assert state.creates == 1 and _chat_calls(judge_env) == 0
    (batch,) = state.batches.values()
    assert batch["endpoint"] == "/v1/chat/completions" and batch["completion_window"] == "24h"
    assert state.uploads[batch["input_file_id"]]["object"]["purpose"] == "batch"
    lines = _input_lines(judge_env, batch["id"])
    assert len(lines) == 3 and len({line["custom_id"] for line in lines}) == 3
    assert all(line["method"] == "POST" and line["url"] == "/v1/chat/completions"
               and line["body"]["model"] == "gpt-5.5"
               and line["body"]["response_format"]["type"] == "json_schema"
               for line in lines)
    result.stdout.fnmatch_lines([
        "*batch judging: 3 items*",
        "*batch batch_000001: 3 judge requests submitted*",
        "procedural: judge cost $0.03* ($0.011* per case)*",
    ])
    report = _report(pytester)
    assert report["aggregate"]["cost_usd"] == pytest.approx(3 * BATCH_COST, abs=3e-4)
    assert all(i["judged"] for i in report["items"])
    record = json.loads(next((pytester.path / "reports").rglob("judgments/*.json")).read_text())
    assert record["judgment"]["cost_usd"] == pytest.approx(BATCH_COST)
    # What a batch judged, a run without batches takes from the store, and the other way.
    again = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128")
    again.assert_outcomes(passed=3)
    assert state.creates == 1 and _chat_calls(judge_env) == 0


def test_batch_and_synchronous_judgments_score_alike(pytester: pytest.Pytester,
                                                     judge_env: BatchServer) -> None:
    _cases(pytester, 4)
    pytester.runpytest(*_args()).assert_outcomes(passed=4)
    pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
                       "--imagetime-out=sync").assert_outcomes(passed=4)
    assert _chat_calls(judge_env) == 4
    batch, sync = _report(pytester), _report(pytester, "sync")
    assert [(i["key"], i["scores"], i["status"]) for i in batch["items"]] == [
        (i["key"], i["scores"], i["status"]) for i in sync["items"]]
    assert batch["aggregate"]["cost_usd"] == pytest.approx(sync["aggregate"]["cost_usd"] / 2,
                                                           abs=3e-4)


def test_invalid_answers_and_passing_errors_are_asked_again_in_a_follow_up_batch(
        pytester: pytest.Pytester, judge_env: BatchServer) -> None:
    _cases(pytester, 4)
    judge_env.state.line_faults = ["ok", "invalid", "500", "400"]
    result = pytester.runpytest(*_args())
    result.assert_outcomes(passed=3, errors=1)
    state = judge_env.state
    assert state.creates == 2
    assert len(_input_lines(judge_env, "batch_000002")) == 2  # the invalid one and the 500
    result.stdout.fnmatch_lines(["*HTTP 400 for this request in its batch: fault 400*"])
    report = _report(pytester)
    (error,) = report["errors"]
    assert "HTTP 400" in error["reason"]
    # The invalid answer's tokens are paid and counted with the answer that replaced it.
    tokens = sorted(i["tokens_in"] for i in report["items"] if i["status"] == "passed")
    assert tokens == [ANSWER_IN, ANSWER_IN, 2 * ANSWER_IN]


def test_re_asking_stops_after_the_reasks_with_every_problem(pytester: pytest.Pytester,
                                                              judge_env: BatchServer) -> None:
    _cases(pytester, 1)
    judge_env.state.line_faults = ["invalid", "invalid"]
    result = pytester.runpytest(*_args("--imagetime-judge-reasks=1"))
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no valid judgment after 2 batch attempts: the answer is not "
                                 "JSON*| the answer is not JSON*"])
    assert judge_env.state.creates == 2
    assert _report(pytester)["aggregate"]["judged"] == 0


@pytest.mark.parametrize(("outcome", "says"), [
    ("failed", "batch batch_000001 failed: token_limit_exceeded: Enqueued token limit*"),
    ("expired", "batch batch_000001 expired before answering this request*run again*"),
    ("cancelled", "batch batch_000001 was cancelled before answering this request*"),
])
def test_a_batch_that_ends_without_answers_says_why_and_the_next_run_submits_them(
        pytester: pytest.Pytester, judge_env: BatchServer, outcome: str, says: str) -> None:
    _cases(pytester, 4)
    judge_env.state.outcomes = [outcome]
    first = pytester.runpytest(*_args())
    answered = 2 if outcome == "expired" else 0
    first.assert_outcomes(passed=answered, errors=4 - answered)
    first.stdout.fnmatch_lines([f"*{says}"])
    report = _report(pytester)
    assert all(i["overall"] is None for i in report["items"] if i["status"] == "error")
    second = pytester.runpytest(*_args())
    second.assert_outcomes(passed=4)
    assert judge_env.state.creates == 2
    assert len(_input_lines(judge_env, "batch_000002")) == 4 - answered


def test_a_refused_batch_makes_its_items_errors_with_the_reason(
        pytester: pytest.Pytester, judge_env: BatchServer) -> None:
    _cases(pytester, 3)
    judge_env.state.refuse_creates = "Billing hard limit has been reached."
    result = pytester.runpytest(*_args())
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*judge vlm failed on kitchen-pour-water-1: the Batch API of "
                                 "http://127.0.0.1:*/v1 refused a batch of 3 requests (HTTP 400: "
                                 "Billing hard limit has been reached.)*"])
    judge_env.state.refuse_creates = None
    pytester.runpytest(*_args()).assert_outcomes(passed=3)


def test_a_killed_run_re_attaches_to_its_batch_instead_of_paying_twice(
        pytester: pytest.Pytester, judge_env: BatchServer) -> None:
    _cases(pytester, 3)
    judge_env.state.polls_to_finish = 10**9  # never ends while the first run waits
    proc = pytester.popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *_args()])
    ledgers = pytester.path / "reports" / "batches"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not judge_env.state.retrieves:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    (ledger,) = ledgers.glob("*.json")
    written = json.loads(ledger.read_text())
    assert written["batch_id"] == "batch_000001" and len(written["custom_ids"]) == 3
    judge_env.state.polls_to_finish = 1
    pytester.runpytest(*_args()).assert_outcomes(passed=3)
    assert judge_env.state.creates == 1 and judge_env.state.uploads_made == 2  # input, output
    # Killed after the batch ended, before its items ran: its results are read from disk.
    for judgment in (pytester.path / "reports").rglob("judgments/*.json"):
        judgment.unlink()
    retrieves = judge_env.state.retrieves
    pytester.runpytest(*_args()).assert_outcomes(passed=3)
    assert judge_env.state.creates == 1 and judge_env.state.retrieves == retrieves


def test_a_run_killed_between_upload_and_batch_finds_the_batch_of_its_file(
        pytester: pytest.Pytester, judge_env: BatchServer) -> None:
    _cases(pytester, 2)
    pytester.runpytest(*_args()).assert_outcomes(passed=2)
    # Written down as uploaded and not as created: the batch made from the file is found.
    (ledger,) = (pytester.path / "reports" / "batches").glob("*.json")
    data = json.loads(ledger.read_text())
    for suffix in (".output.jsonl", ".errors.jsonl"):
        ledger.with_suffix(suffix).unlink(missing_ok=True)
    data.update(batch_id=None, status="uploaded", downloaded=False)
    ledger.write_text(json.dumps(data))
    for judgment in (pytester.path / "reports").rglob("judgments/*.json"):
        judgment.unlink()
    pytester.runpytest(*_args()).assert_outcomes(passed=2)
    assert judge_env.state.creates == 1
    assert json.loads(ledger.read_text())["batch_id"] == "batch_000001"


def test_requests_are_split_into_files_within_the_api_limits(
        pytester: pytest.Pytester, judge_env: BatchServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    _cases(pytester, 5)
    monkeypatch.setattr(batch_module, "MAX_REQUESTS", 2)
    pytester.runpytest(*_args()).assert_outcomes(passed=5)
    sizes = [len(_input_lines(judge_env, b)) for b in judge_env.state.batches]
    assert sizes == [2, 2, 1]
    monkeypatch.setattr(batch_module, "MAX_REQUESTS", 50_000)
    monkeypatch.setattr(batch_module, "MAX_FILE_BYTES", 1)  # one request a file
    pytester.runpytest(*_args("--imagetime-rejudge")).assert_outcomes(passed=5)
    assert len(judge_env.state.batches) == 3 + 5


def test_repeats_are_requested_and_combined(pytester: pytest.Pytester,
                                            judge_env: BatchServer) -> None:
    _cases(pytester, 2)
    pytester.runpytest(*_args("--imagetime-judge-repeats=3")).assert_outcomes(passed=2)
    assert len(_input_lines(judge_env, "batch_000001")) == 6
    assert len(list((pytester.path / "reports").rglob("judgments/*.json"))) == 6


def test_under_xdist_each_worker_batches_its_share(pytester: pytest.Pytester,
                                                   judge_env: BatchServer) -> None:
    _cases(pytester, 6)
    result = pytester.runpytest(*_args("-n", "2"))
    result.assert_outcomes(passed=6)
    assert judge_env.state.creates == 2 and _chat_calls(judge_env) == 0
    sizes = sorted(len(_input_lines(judge_env, b)) for b in judge_env.state.batches)
    assert sizes == [3, 3]
    assert _report(pytester)["aggregate"]["judged"] == 6


def test_mistakes_stop_the_run_at_start_up(pytester: pytest.Pytester,
                                           judge_env: BatchServer,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _cases(pytester, 1)
    cases = [
        (["--imagetime-judge=pixel"], "batches judge with the vlm judge only*"),
        (["--imagetime-max-cost=1"], "a batch is paid when it ends*--imagetime-dry-run*"),
        (["--imagetime-regenerate"], "--imagetime-regenerate would draw every sheet again*"),
    ]
    for extra, message in cases:
        result = pytester.runpytest(*_args(*extra))
        assert result.ret == pytest.ExitCode.USAGE_ERROR, extra
        result.stderr.fnmatch_lines([f"ERROR: --imagetime-judge-batch: {message}"])
    judge_env.state.batch_api = False
    result = pytester.runpytest(*_args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --imagetime-judge-batch: the judge endpoint "
                                 "http://127.0.0.1:*/v1 does not take batches (HTTP 404*"
                                 "drop --imagetime-judge-batch*"])
    judge_env.state.batch_api = True
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-0000")
    result = pytester.runpytest(*_args())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*does not take batches (HTTP 401*"])
    assert "sk-wrong-key-0000" not in result.stderr.str()
    assert not (pytester.path / "reports").exists()


def test_batch_ids_and_keys_never_leak(pytester: pytest.Pytester,
                                       judge_env: BatchServer) -> None:
    _cases(pytester, 2)
    judge_env.state.line_faults = ["400"]
    pytester.runpytest(*_args("--junitxml=junit.xml")).assert_outcomes(passed=1, errors=1)
    for path in pytester.path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_the_canaries_of_a_batch_run_are_judged_at_once(pytester: pytest.Pytester,
                                                        judge_env: BatchServer) -> None:
    _cases(pytester, 1)
    pytester.runpytest(*_args("--imagetime-canaries")).assert_outcomes(passed=1)
    assert _chat_calls(judge_env) == 6 and judge_env.state.creates == 1
    assert len(_report(pytester)["canaries"]) == 6


def test_the_benchmark_cases_of_a_domain_in_one_batch(pytester: pytest.Pytester,
                                                      judge_env: BatchServer) -> None:
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    result = pytester.runpytest("constraints.yaml", "--imagetime-model=procedural",
                                "--imagetime-size=128", "--imagetime-judge-batch",
                                "--imagetime-judge-batch-poll=0.01")
    result.assert_outcomes(passed=24)
    assert judge_env.state.creates == 1
    assert Path(pytester.path / "reports" / "batches").is_dir()


def test_the_same_sheet_in_two_runs_is_asked_for_once(pytester: pytest.Pytester,
                                                      judge_env: BatchServer) -> None:
    _cases(pytester, 2)
    pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
                       "--imagetime-judge=pixel", "--imagetime-out=drawn").assert_outcomes(passed=2)
    images = pytester.path / "drawn" / "procedural" / "images"
    result = pytester.runpytest(*_args(f"--imagetime-model=files:{images}"))
    result.assert_outcomes(passed=4)
    assert judge_env.state.creates == 1
    assert len(_input_lines(judge_env, "batch_000001")) == 2
