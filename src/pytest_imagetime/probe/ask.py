"""Asking an OpenAI-compatible Chat Completions endpoint for one JSON answer.

The answer must match a JSON Schema (strict structured outputs). Transport failures (429,
5xx, timeouts, resets) are retried by the openai client with backoff; an answer that arrives
but is unusable (not JSON, wrong shape, refused, cut off) is asked for again a bounded number
of times. What still fails raises JudgeError with the reason and never becomes an answer.
The vlm judge does the same for its own schema; this is its small, schema-agnostic sibling.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema

from ..judges.base import JudgeOptions
from ..judges.prices import Price, cost_usd, price_for
from ..judges.vlm import NO_CALLS, InvalidAnswer, _openai
from ..judgment import JudgeError

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


def strict_format(name: str, schema: Mapping[str, JSON]) -> dict[str, JSON]:
    return {"type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": dict(schema)}}


def api_key(key_env: str | None, who: str, hint: str) -> str | None:
    """The key from ``key_env``; None for servers without keys. Raises ValueError, naming
    the variable and how to name another (``hint``), when it is unset."""
    if key_env is None:
        return None
    key = os.environ.get(key_env)
    if not key:
        raise ValueError(f"{who} needs an API key in the environment variable {key_env} "
                         f"({hint})")
    return key


class JsonAsker:
    """One thread-safe client for every request of a probe or a judge."""

    def __init__(self, options: JudgeOptions, *, who: str, key_hint: str) -> None:
        self.options = options
        self.who = who
        self.model = options.model
        self.price: Price | None = price_for(self.model, options.price_per_mtok,
                                             options.prices_file)
        self.base_url = options.base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.api_key: str | None = None
        self._client: Any = None
        if not options.calls:  # its judge only names, describes and prices its judgments
            return
        self._sdk = _openai()
        self.api_key = api_key(options.key_env, who, key_hint)
        self._client = self._sdk.OpenAI(
            api_key=self.api_key or "unused", base_url=self.base_url,
            timeout=options.timeout_s, max_retries=options.retries)

    def ask(self, messages: list[dict[str, JSON]], name: str, schema: Mapping[str, JSON],
            check: Check | None = None) -> Answer:
        """The validated answer, or JudgeError after the retries."""
        validator = jsonschema.Draft202012Validator(dict(schema))
        problems: list[str] = []
        tokens_in = tokens_out = 0
        for attempt in range(1, self.options.retries + 2):
            try:
                response = self._call(messages, strict_format(name, schema))
                usage = getattr(response, "usage", None)
                tokens_in += int(getattr(usage, "prompt_tokens", 0) or 0)
                tokens_out += int(getattr(usage, "completion_tokens", 0) or 0)
                content, value = _parse(response, validator, check)
            except InvalidAnswer as exc:
                problems.append(self.redact(str(exc)))
                continue
            return Answer(value, content, tokens_in, tokens_out,
                          cost_usd(self.price, tokens_in, tokens_out), attempt)
        raise JudgeError(f"no valid answer after {len(problems)} attempts: "
                         + " | ".join(problems))

    def _call(self, messages: list[dict[str, JSON]], response_format: dict[str, JSON]) -> Any:
        if self._client is None:
            raise JudgeError(f"{self.who} was {NO_CALLS}")
        openai = self._sdk
        request: dict[str, JSON] = {"model": self.model, "messages": messages,
                                    "response_format": response_format}
        request.update(self.options.params)
        retries = self.options.retries
        try:
            return self._client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            raise JudgeError(self.redact(f"HTTP {exc.status_code} from the endpoint after "
                                         f"{retries} retries: {short(exc.message)}")) from None
        except openai.APITimeoutError:
            raise JudgeError(f"the endpoint timed out ({self.options.timeout_s:g} s, "
                             f"{retries} retries)") from None
        except openai.APIConnectionError as exc:
            raise JudgeError(self.redact(f"cannot reach the endpoint "
                                         f"{self.base_url or 'api.openai.com'}: {exc}")) from None
        except openai.APIError as exc:
            raise JudgeError(self.redact(f"bad response from the endpoint: "
                                         f"{short(str(exc))}")) from None
        except ValueError as exc:  # a response body that is not JSON
            raise InvalidAnswer(f"the response body is not JSON: {short(str(exc))}") from None

    def redact(self, text: str) -> str:
        """The key never leaves this object: not in errors, logs or reports."""
        return text.replace(self.api_key, "***") if self.api_key else text


def message_text(response: Any) -> str:
    """The answer's text; InvalidAnswer for no choices, a refusal or a cut-off answer."""
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise InvalidAnswer("the response has no choices")
    choice = choices[0]
    refusal = getattr(choice.message, "refusal", None)
    if refusal:
        raise InvalidAnswer(f"refused: {short(refusal)}")
    if choice.finish_reason == "length":
        raise InvalidAnswer("the answer was cut off (finish_reason=length)")
    content = choice.message.content
    return content if isinstance(content, str) else ""


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
