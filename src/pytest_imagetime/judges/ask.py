"""Asking an OpenAI-compatible Chat Completions endpoint for one JSON answer.

The answer must match a JSON Schema (strict structured outputs). Transport failures are
retried by ``openai_client.Endpoint``; an answer that arrives but is unusable (not JSON,
wrong shape, refused, cut off) is asked for again ``reasks`` times. What still fails raises
JudgeError with the reason and never becomes an answer. The vlm judge does the same for its
own schema; this is its small, schema-agnostic sibling.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema

from ..backends.openai_client import (
    NO_CALLS,
    Endpoint,
    InvalidAnswer,
    base_url_of,
    message_text,
    safe_url,
    usage_tokens,
)
from ..backends.prices import Price, known_cost, price_for
from ..rubric.judgment import JudgeError
from .base import JudgeOptions
from .vlm import endpoint_for

JSON = Any
# Checks an answer beyond its schema (ids all present, labels once each); returns a problem.
Check = Callable[[JSON], str | None]


@dataclass(frozen=True)
class Answer:
    value: JSON  # the parsed, validated answer
    content: str  # the raw message content
    tokens_in: int
    tokens_out: int
    cost_usd: float
    attempts: int
    tokens_cached: int = 0  # the part of tokens_in read from the provider's prompt cache


def strict_format(name: str, schema: Mapping[str, JSON]) -> dict[str, JSON]:
    return {"type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": dict(schema)}}


class JsonAsker:
    """One thread-safe client for every request of a probe or a judge."""

    def __init__(self, options: JudgeOptions, *, who: str, key_hint: str,
                 hints: Mapping[str, str] | None = None) -> None:
        self.options = options
        self.who = who
        self.model = options.model
        self.price: Price | None = price_for(self.model, options.price_per_mtok,
                                             options.prices_file)
        # As shown and stored: credentials in the URL are masked.
        self.base_url = safe_url(base_url_of(options.base_url))
        self.api_key: str | None = None
        self._endpoint: Endpoint | None = None
        if not options.calls:  # its judge only names, describes and prices its judgments
            return
        self._endpoint = endpoint_for(options, backend=who, who="the endpoint",
                                      key_hint=key_hint, **(hints or {}))
        self.api_key = self._endpoint.config.api_key

    @property
    def response_format(self) -> str:
        return self.options.response_format

    @property
    def endpoint(self) -> Endpoint:
        if self._endpoint is None:
            raise JudgeError(f"{self.who} was {NO_CALLS}")
        return self._endpoint

    def ask(self, messages: list[dict[str, JSON]], name: str, schema: Mapping[str, JSON],
            check: Check | None = None) -> Answer:
        """The validated answer, or JudgeError after the retries."""
        validator = jsonschema.Draft202012Validator(dict(schema))
        problems: list[str] = []
        tokens_in = tokens_out = tokens_cached = 0
        for attempt in range(1, self.options.reasks + 2):
            try:
                response = self._call(messages, strict_format(name, schema))
                used_in, used_out, used_cached = usage_tokens(response)
                tokens_in += used_in
                tokens_out += used_out
                tokens_cached += used_cached
                content, value = _parse(response, validator, check)
            except InvalidAnswer as exc:
                problems.append(self.redact(str(exc)))
                continue
            cost = known_cost(self.price, tokens_in, tokens_out, tokens_cached)
            return Answer(value, content, tokens_in, tokens_out,
                          0.0 if cost is None else cost, attempt, tokens_cached)
        raise JudgeError(f"no valid answer after {len(problems)} attempts: "
                         + " | ".join(problems))

    def _call(self, messages: list[dict[str, JSON]], response_format: dict[str, JSON]) -> Any:
        request: dict[str, JSON] = {"model": self.model, "messages": messages,
                                    "response_format": response_format}
        request.update(self.options.params)
        return self.endpoint.call(lambda client: client.chat.completions.create(**request))

    def redact(self, text: str) -> str:
        """The key never leaves this object: not in errors, logs or reports."""
        return text if self._endpoint is None else self._endpoint.redact(text)


def _parse(response: Any, validator: jsonschema.Draft202012Validator,
           check: Check | None) -> tuple[str, JSON]:
    content = message_text(response)
    try:
        value = json.loads(content)
    except ValueError:
        raise InvalidAnswer(f"the answer is not JSON: {short(content)!r}") from None
    errors = sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        where = "/".join(map(str, errors[0].absolute_path)) or "(root)"
        raise InvalidAnswer(f"the answer does not match the schema at {where}: "
                            f"{short(errors[0].message)}")
    problem = check(value) if check is not None else None
    if problem:
        raise InvalidAnswer(problem)
    return content, value


def short(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
