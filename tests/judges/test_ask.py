"""One JSON answer from a Chat Completions endpoint: strict schema, checks, asked again when
unusable, a JudgeError with every reason when it stays unusable, and the key never shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_imagetime.judges.ask import (
    JsonAsker,
    api_key,
    short,
    strict_format,
)
from pytest_imagetime.judges.base import JudgeOptions
from pytest_imagetime.rubric.judgment import JudgeError
from tests.fake_openai import ChatServer, ServerState, chat_server

SCHEMA = {"type": "object", "properties": {"order": {"type": "array",
                                                     "items": {"type": "integer"}}},
          "required": ["order"], "additionalProperties": False}
MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "order the panels"}]


@pytest.fixture
def replies() -> list[str]:
    return []


@pytest.fixture
def server(replies: list[str]) -> Iterator[ChatServer]:
    def respond(request: dict[str, Any]) -> str:
        return replies.pop(0) if replies else json.dumps({"order": [1, 2, 3, 4]})

    with chat_server(ServerState(responder=respond)) as running:
        yield running


def _asker(server: ChatServer, **options: Any) -> JsonAsker:
    values: dict[str, Any] = {"base_url": server.base_url, "key_env": None, "retries": 0,
                              "reasks": 2, "timeout_s": 5.0, "price_per_mtok": (2.0, 8.0)}
    values.update(options)
    return JsonAsker(JudgeOptions(**values), who="the order probe", key_hint="--key-env")


def test_a_valid_answer_is_returned_with_its_cost(server: ChatServer) -> None:
    answer = _asker(server).ask(MESSAGES, "order", SCHEMA)
    assert answer.value == {"order": [1, 2, 3, 4]}
    assert (answer.attempts, answer.tokens_in, answer.tokens_out) == (1, 1500, 500)
    assert answer.cost_usd == pytest.approx((1500 * 2.0 + 500 * 8.0) / 1e6)
    request = server.state.requests[-1]
    assert request["response_format"] == strict_format("order", SCHEMA)
    assert request["messages"] == MESSAGES


def test_an_unusable_answer_is_asked_for_again(server: ChatServer, replies: list[str]) -> None:
    replies.extend(["not json", json.dumps({"order": "1234"})])
    answer = _asker(server).ask(MESSAGES, "order", SCHEMA)
    assert answer.attempts == 3
    assert answer.tokens_in == 3 * 1500  # every attempt is paid for


def test_every_reason_is_named_when_no_answer_is_usable(server: ChatServer,
                                                        replies: list[str]) -> None:
    replies.extend(["not json", json.dumps({"order": "1234"}), json.dumps({"order": [1]})])

    def four_panels(value: Any) -> str | None:
        return None if len(value["order"]) == 4 else "not four panels"

    with pytest.raises(JudgeError) as raised:
        _asker(server).ask(MESSAGES, "order", SCHEMA, check=four_panels)
    assert str(raised.value) == (
        "no valid answer after 3 attempts: the answer is not JSON: 'not json' | the answer "
        "does not match the schema at order: '1234' is not of type 'array' | not four panels")


def test_a_session_without_calls_refuses_to_ask(server: ChatServer) -> None:
    asker = _asker(server, calls=False)
    with pytest.raises(JudgeError, match="the order probe was "):
        asker.ask(MESSAGES, "order", SCHEMA)
    assert asker.redact("text") == "text"
    assert server.state.requests == []


def test_the_key_is_read_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBE_KEY", "sk-secret")
    assert api_key("PROBE_KEY", "the probe", "hint") == "sk-secret"
    assert api_key(None, "the probe", "hint") is None
    monkeypatch.delenv("PROBE_KEY")
    with pytest.raises(ValueError, match=r"^the probe needs an API key in the environment "
                                         r"variable PROBE_KEY \(give --key-env\)$"):
        api_key("PROBE_KEY", "the probe", "give --key-env")


def test_the_key_is_redacted_from_what_the_asker_shows(server: ChatServer,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROBE_KEY", "sk-abcdefghijklmnop")
    asker = _asker(server, key_env="PROBE_KEY")
    assert "sk-abcdefghijklmnop" not in asker.redact("failed with sk-abcdefghijklmnop")


def test_short_texts_are_one_line_and_bounded() -> None:
    assert short("a\n  b\tc") == "a b c"
    assert short("x" * 300, limit=10) == "x" * 10 + "..."
