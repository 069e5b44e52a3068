"""Asking an OpenAI-compatible Chat Completions endpoint for one free-text answer.

The sibling of ``ask.JsonAsker.ask`` for questions whose answer is prose (a sentence, a
"Total rating: N" line) rather than a JSON object: the same asker, endpoint, retries, price
and redaction; no ``response_format`` is sent. ``read`` turns the text into the value and
raises InvalidAnswer when it cannot, which asks again up to ``reasks`` times; what still fails
raises JudgeError with the reason and never becomes an answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..backends.openai_client import InvalidAnswer, message_text, usage_tokens
from ..backends.prices import known_cost
from ..rubric.judgment import JudgeError
from .ask import JsonAsker, short

T = TypeVar("T")


@dataclass(frozen=True)
class TextAnswer(Generic[T]):
    value: T  # what ``read`` made of the text
    content: str  # the raw message content
    tokens_in: int
    tokens_out: int
    cost_usd: float
    attempts: int


def nonempty_text(content: str) -> str:
    """The answer itself, stripped; InvalidAnswer when there is none."""
    text = content.strip()
    if not text:
        raise InvalidAnswer("the answer is empty")
    return text


def ask_text(asker: JsonAsker, messages: list[dict[str, Any]],
             read: Callable[[str], T]) -> TextAnswer[T]:
    """The answer ``read`` accepts, or JudgeError after the re-asks."""
    problems: list[str] = []
    tokens_in = tokens_out = tokens_cached = 0
    request: dict[str, Any] = {"model": asker.model, "messages": messages,
                               **asker.options.params}
    for attempt in range(1, asker.options.reasks + 2):
        try:
            response = asker.endpoint.call(
                lambda client: client.chat.completions.create(**request))
            used_in, used_out, used_cached = usage_tokens(response)
            tokens_in += used_in
            tokens_out += used_out
            tokens_cached += used_cached
            content = message_text(response)
            value = read(content)
        except InvalidAnswer as exc:
            problems.append(asker.redact(str(exc)))
            continue
        cost = known_cost(asker.price, tokens_in, tokens_out, tokens_cached)
        return TextAnswer(value, content, tokens_in, tokens_out,
                          0.0 if cost is None else cost, attempt)
    raise JudgeError(f"no usable answer after {len(problems)} attempts: "
                     + " | ".join(short(p) for p in problems))
