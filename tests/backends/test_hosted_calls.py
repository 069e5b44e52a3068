"""Retries, the first-call check and the breaker of the hosted backends' calls, with attempts
that fail as request_json's do."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_imagetime.backends.hosted_calls import (
    BadBody,
    CallsConfig,
    HostedCalls,
    HttpStatus,
    http_failure,
)
from pytest_imagetime.models.base import ModelError

SECRET = "key-0123456789abcdef"


@pytest.fixture(autouse=True)
def no_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    waits: list[float] = []
    monkeypatch.setattr("pytest_imagetime.backends.hosted_calls.time.sleep", waits.append)
    return waits


def _calls(retries: int = 2, check: Callable[[], None] | None = None) -> HostedCalls:
    return HostedCalls(CallsConfig(who="the API", shown_url="https://api.example",
                                   key_env="API_KEY", timeout_s=1.0, retries=retries,
                                   secrets=(SECRET,)), error=ModelError, check=check)


def _failing(*errors: BaseException) -> Callable[[], str]:
    queue = list(errors)

    def attempt() -> str:
        if queue:
            raise queue.pop(0)
        return "answer"
    return attempt


def test_a_429_waits_as_long_as_the_server_asks(no_waits: list[float]) -> None:
    calls = _calls()
    assert calls.call(_failing(HttpStatus(429, {"error": {"message": "slow"}},
                                          {"retry-after": "3"}))) == "answer"
    assert no_waits == [3.0]


def test_retries_end_with_the_last_failure_and_their_count() -> None:
    calls = _calls(retries=2)
    with pytest.raises(ModelError, match=r"HTTP 503 from the API after 2 retries: down"):
        calls.call(_failing(*[HttpStatus(503, {"detail": "down"}, {}) for _ in range(3)]))


@pytest.mark.parametrize(
    ("error", "kind", "retryable"),
    [
        (TimeoutError("timed out"), "timeout", True),
        (ConnectionError("refused"), "connection", True),
        (BadBody("not JSON"), "bad-body", False),
        (HttpStatus(401, {"error": {"message": "no"}}, {}), "auth", False),
        (HttpStatus(402, {"detail": "Insufficient credits"}, {}), "auth", False),
        (HttpStatus(400, {"error": {"message": "bad"}}, {}), "status", False),
        (HttpStatus(409, "conflict", {}), "status", True),
        (HttpStatus(500, "", {}), "status", True),
    ],
)
def test_what_each_failure_is(error: BaseException, kind: str, retryable: bool) -> None:
    failure = http_failure(error)
    assert failure is not None
    assert (failure.kind, failure.retryable) == (kind, retryable)


def test_a_rejected_key_stops_every_later_call_and_is_redacted() -> None:
    calls = _calls()
    with pytest.raises(ModelError, match="HTTP 401"):
        calls.call(_failing(HttpStatus(401, {"error": {"message": f"bad key {SECRET}"}}, {})))
    with pytest.raises(ModelError, match=r"not called: the API failed once .*bad key \*\*\*.*"
                                         r"Check the key in API_KEY") as info:
        calls.call(_failing())
    assert SECRET not in str(info.value)


def test_five_identical_failures_in_a_row_stop_the_calls() -> None:
    calls = _calls(retries=0)
    for _ in range(4):
        with pytest.raises(ModelError, match="HTTP 400"):
            calls.call(_failing(HttpStatus(400, {"detail": "bad field"}, {})))
    with pytest.raises(ModelError, match=r"^the API failed 5 times in a row \(HTTP 400"):
        calls.call(_failing(HttpStatus(400, {"detail": "bad field"}, {})))
    with pytest.raises(ModelError, match=r"not called: the API failed 5 times in a row"):
        calls.call(_failing())


def test_a_404_before_any_answer_stops_the_calls_at_once() -> None:
    calls = _calls(retries=2)
    with pytest.raises(ModelError, match=r"^the API failed once \(HTTP 404 from the API: "
                                         r"no such model\).*Check the model name"):
        calls.call(_failing(HttpStatus(404, {"detail": "no such model"}, {})))
    with pytest.raises(ModelError, match=r"^not called: the API failed once"):
        calls.call(_failing())


def test_a_404_after_an_answer_is_that_call_s_error_only() -> None:
    calls = _calls(retries=0)
    assert calls.call(_failing()) == "answer"
    with pytest.raises(ModelError, match=r"^HTTP 404 from the API: gone"):
        calls.call(_failing(HttpStatus(404, {"detail": "gone"}, {})))
    assert calls.call(_failing()) == "answer"


def test_a_check_that_cannot_reach_the_api_stops_the_calls() -> None:
    checks: list[int] = []

    def check() -> None:
        checks.append(1)
        raise ConnectionError("refused")

    calls = _calls(retries=1, check=check)
    for _ in range(2):
        with pytest.raises(ModelError, match=r"not called: .*checked before the first call: "
                                             r"cannot reach the API https://api.example"):
            calls.call(_failing())
    assert len(checks) == 2  # the check and its one retry, once per process


def test_a_check_that_meets_another_answer_leaves_it_to_the_calls() -> None:
    def check() -> None:
        raise HttpStatus(404, {"detail": "no route"}, {})

    assert _calls(check=check).call(_failing()) == "answer"


def test_without_a_check_the_first_call_is_one() -> None:
    calls, sent = _calls(), []

    def rejected() -> str:
        sent.append(1)
        threading.Event().wait(0.2)  # the others arrive while it is in flight
        raise HttpStatus(401, {"error": {"message": "bad key"}}, {})

    def attempt_and_tell() -> str:
        try:
            return calls.call(rejected)
        except ModelError as exc:
            return str(exc)

    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(lambda _: attempt_and_tell(), range(3)))
    assert len(sent) == 1
    assert sum(a.startswith("not called:") for a in answers) == 2
