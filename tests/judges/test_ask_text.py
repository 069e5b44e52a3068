"""One free-text answer from a Chat Completions endpoint: no response_format, the text read by
the caller, asked again when unusable, a JudgeError with every reason when it stays
unusable, its cost summed over the attempts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_imagetime.backends.openai_client import InvalidAnswer
from pytest_imagetime.judges.ask import JsonAsker
from pytest_imagetime.judges.ask_text import ask_text, nonempty_text
from pytest_imagetime.judges.base import JudgeOptions
from pytest_imagetime.rubric.judgment import JudgeError
from tests.fake_openai import ChatServer, ServerState, chat_server

MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "why is the top one later?"}]


@pytest.fixture
def replies() -> list[str]:
    return []


@pytest.fixture
def server(replies: list[str]) -> Iterator[ChatServer]:
    def respond(request: dict[str, Any]) -> str:
        return replies.pop(0) if replies else "  The glass fills over time.\n"

    with chat_server(ServerState(responder=respond)) as running:
        yield running


def _asker(server: ChatServer, **options: Any) -> JsonAsker:
    values: dict[str, Any] = {"base_url": server.base_url, "key_env": None, "retries": 0,
                              "reasks": 2, "timeout_s": 5.0, "price_per_mtok": (2.0, 8.0),
                              "model": "fake-judge", "params": {"temperature": 0.8}}
    values.update(options)
    return JsonAsker(JudgeOptions(**values), who="the order probe", key_hint="--key-env")


def test_a_free_text_answer_is_returned_with_its_cost(server: ChatServer) -> None:
    answer = ask_text(_asker(server), MESSAGES, nonempty_text)
    assert (answer.value, answer.content) == ("The glass fills over time.",
                                              "  The glass fills over time.\n")
    assert (answer.attempts, answer.tokens_in, answer.tokens_out) == (1, 1500, 500)
    assert answer.cost_usd == pytest.approx((1500 * 2.0 + 500 * 8.0) / 1e6)
    request = server.state.requests[-1]
    assert "response_format" not in request
    assert (request["messages"], request["temperature"]) == (MESSAGES, 0.8)


def _digit(content: str) -> int:
    if not content.strip().isdigit():
        raise InvalidAnswer(f"not a digit: {content!r}")
    return int(content)


def test_an_unusable_answer_is_asked_for_again(server: ChatServer, replies: list[str]) -> None:
    replies.extend(["four", "4"])
    answer = ask_text(_asker(server), MESSAGES, _digit)
    assert (answer.value, answer.attempts, answer.tokens_in) == (4, 2, 3000)


def test_an_answer_that_stays_unusable_is_an_error_with_every_reason(
        server: ChatServer, replies: list[str]) -> None:
    replies.extend(["   ", "", " "])
    with pytest.raises(JudgeError, match=r"^no usable answer after 2 attempts: the answer is "
                                         r"empty \| the answer is empty$"):
        ask_text(_asker(server, reasks=1), MESSAGES, nonempty_text)
    assert len(server.state.requests) == 2
