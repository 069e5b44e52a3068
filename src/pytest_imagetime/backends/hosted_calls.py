"""Calls to hosted image APIs that are not OpenAI's: JSON over HTTP with the standard library,
transport retries, a check before the first call, a circuit breaker, error wording and
redaction of the key.

The rules are those of ``openai_client.Endpoint`` (docs/hosted-models.md): a request is sent at
most ``1 + retries`` times; retried are connection failures, timeouts, HTTP 408, 409, 429 and
5xx, after the server's ``retry-after`` when it gives one, else after an exponential backoff;
never retried is any other status or a refusal. A backend's free check (or, without one, its
first call, which the others wait for) runs before the rest. A rejected key (401, 403, or what
a provider says instead) stops every later call of the process at once: the key does not
change between calls, nor does a call's 404 before any call succeeded (no such model or
endpoint, as when a provider retires a model id). Other failures open the breaker after
``openai_client.BREAKER_AFTER`` identical ones in a row.

A backend gives its own ``classify`` for what its SDK raises (the Gemini backend) or uses
``http_failure`` for ``HttpStatus`` answers of ``request_json`` (Seedream, BFL).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from .openai_client import (
    QUOTA_CODES,
    RETRIED_STATUSES,
    Breaker,
    Failure,
    backoff_s,
    breaker_reason,
    key_to_check,
    redact,
    retry_after,
    server_message,
)

T = TypeVar("T")
# 402: no credits left, which no wait or retry mends either.
AUTH_STATUSES = frozenset({401, 402, 403})


class HttpStatus(Exception):
    """An answer with a status other than 2xx; ``body`` is parsed JSON where it is JSON."""

    def __init__(self, status: int, body: Any, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.headers = headers


class BadBody(Exception):
    """A 2xx answer whose body is not the JSON it should be."""


def _headers(raw: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in (raw.items() if raw is not None else [])}


def request_json(method: str, url: str, *, headers: Mapping[str, str], timeout_s: float,
                 body: Mapping[str, Any] | None = None) -> tuple[Any, dict[str, str]]:
    """One HTTP request and its parsed JSON answer with its headers (lower-case names).
    Raises HttpStatus, BadBody, TimeoutError or ConnectionError."""
    data = None if body is None else json.dumps(body).encode()
    sent = {"accept": "application/json", **headers}
    if data is not None:
        sent["content-type"] = "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            raw, answered = answer.read(), _headers(answer.headers)
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace") if exc.fp is not None else ""
        try:
            parsed: Any = json.loads(text)
        except ValueError:
            parsed = text
        raise HttpStatus(exc.code, parsed, _headers(exc.headers)) from None
    except TimeoutError:
        raise TimeoutError("timed out") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise TimeoutError("timed out") from None
        raise ConnectionError(str(exc.reason)) from None
    except (ConnectionError, OSError) as exc:  # a reset while the answer is read
        raise ConnectionError(str(exc) or type(exc).__name__) from None
    try:
        return json.loads(raw), answered
    except ValueError as exc:
        raise BadBody(f"{exc}: {raw[:120]!r}") from None


def fetch_bytes(url: str, timeout_s: float) -> bytes:
    """A file at a (signed) URL, fetched once without any of our headers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            data: bytes = answer.read()
            return data
    except urllib.error.HTTPError as exc:
        raise ConnectionError(f"HTTP {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise ConnectionError(str(exc) or type(exc).__name__) from None


def error_code(body: Any) -> str:
    """The code and type of an error body: ``{"error": {"code", "type", "status"}}`` or flat."""
    error = body.get("error", body) if isinstance(body, Mapping) else None
    if not isinstance(error, Mapping):
        return ""
    return " ".join(str(error[k]) for k in ("code", "type", "status") if error.get(k))


def http_failure(exc: BaseException) -> Failure | None:
    """What went wrong in one attempt made with ``request_json``; None for anything else."""
    if isinstance(exc, TimeoutError):
        return Failure("timeout", None, "timed out", True)
    if isinstance(exc, ConnectionError):
        return Failure("connection", None, str(exc), True)
    if isinstance(exc, BadBody):
        return Failure("bad-body", None, str(exc), False)
    if not isinstance(exc, HttpStatus):
        return None
    message = " ".join(server_message(exc.body, f"HTTP {exc.status}").split())
    code = error_code(exc.body)
    if exc.status in AUTH_STATUSES or (exc.status == 429
                                       and any(c in code for c in QUOTA_CODES)):
        return Failure("auth", exc.status, message, False, code=code)
    retryable = exc.status in RETRIED_STATUSES or exc.status >= 500
    return Failure("status", exc.status, message, retryable, retry_after(exc.headers), code)


@dataclass(frozen=True)
class CallsConfig:
    """Where and how a backend calls, and what to tell a user to check when it fails."""

    who: str  # "the Seedream endpoint"
    shown_url: str  # the base URL as it may be shown: credentials masked
    key_env: str | None  # None: no key (a local server), or credentials from elsewhere
    timeout_s: float
    retries: int
    secrets: tuple[str, ...] = ()  # redacted from every message
    key_option: str = "--imagetime-model-key-env"
    base_url_option: str = "--imagetime-model-base-url"
    timeout_option: str = "--imagetime-model-timeout"
    model_option: str = "the model in the spec"
    credentials: str = ""  # what else to check when the key is rejected (Vertex: ADC)


class HostedCalls:
    """Retries, the breaker and the first-call check of one backend in one process;
    thread-safe. ``refusal`` tells a provider's refusal of one prompt from other failures."""

    def __init__(self, config: CallsConfig, *, error: type[Exception],
                 classify: Callable[[BaseException], Failure | None] = http_failure,
                 check: Callable[[], None] | None = None,
                 refusal: Callable[[Failure], bool] = lambda failure: False) -> None:
        self.config = config
        self.error = error
        self.classify = classify
        self.refusal = refusal
        self.breaker = Breaker()
        self._check = check
        self._checked = False  # the check, or without one the first call, has been answered
        self._called = False  # a call (not the check) has been answered: the model exists
        self._check_lock = threading.Lock()

    # ------------------------------------------------------------ wording

    def redact(self, text: str) -> str:
        return redact(text, self.config.secrets)

    def describe(self, failure: Failure, retried: int) -> str:
        who = self.config.who
        after = f" after {retried} retr{'y' if retried == 1 else 'ies'}" if retried else ""
        if failure.kind == "timeout":
            return f"{who} timed out ({self.config.timeout_s:g} s a request){after}"
        if failure.kind == "connection":
            return f"cannot reach {who} {self.config.shown_url}{after}: {_short(failure.message)}"
        if failure.kind == "bad-body":
            return f"{who}'s response is not valid JSON: {_short(failure.message)}"
        if self.refusal(failure):
            code = f", {failure.code}" if failure.code else ""
            return f"{who} refused the prompt (content policy{code}): {_short(failure.message)}"
        return f"HTTP {failure.status} from {who}{after}: {_short(failure.message)}"

    def what_to_check(self, failure: Failure) -> str:
        c = self.config
        where = (f"the base URL {c.shown_url} ({c.base_url_option}) and that the server is up "
                 f"and reachable from here (HTTPS_PROXY / NO_PROXY)")
        if failure.kind == "timeout":
            return f"{where}; a server that is only slow needs a longer {c.timeout_option}"
        if failure.kind == "connection":
            return where
        if failure.kind == "auth":
            key = key_to_check(c.key_env, c.key_option)
            return f"{key}{c.credentials}, and that it is a key for {c.shown_url}"
        return f"the model name ({c.model_option}) and the base URL {c.shown_url}"

    def _trip(self, failure: Failure, text: str, count: int) -> None:
        self.breaker.trip(self.redact(
            breaker_reason(self.config.who, text, count, self.what_to_check(failure))))

    # ------------------------------------------------------------ calls

    def ensure_checked(self) -> None:
        """Run the backend's check once, before the first call of this process: a rejected
        key or an unreachable endpoint stops the run's calls before any is paid for."""
        if self._checked or self._check is None:
            return
        with self._check_lock:
            if self._checked or self._check is None:
                return
            try:
                self._attempts(self._check, checking=True)
            except self.error:
                # A failure calls would meet too is in the breaker now. Any other answer tells
                # nothing: the first call is the check then, and the others wait for it.
                if not self.breaker.open:
                    self._check = None
                    return
            self._checked = True

    def call(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` with retries; raises ``error`` with the reason, redacted. Without a
        check, the first call is one: the others wait for its answer, so that a rejected key
        is sent once."""
        self.ensure_checked()
        if not self._checked:
            with self._check_lock:
                if not self._checked:
                    try:
                        return self._attempts(attempt)
                    finally:
                        self._checked = True
        return self._attempts(attempt)

    def _attempts(self, attempt: Callable[[], T], checking: bool = False) -> T:
        retried = 0
        while True:
            if self.breaker.open:
                raise self.error(f"not called: {self.breaker.reason}")
            try:
                result = attempt()
            except self.error:
                raise
            except Exception as exc:  # the provider's failures are classified below
                failure = self.classify(exc)
                if failure is None:
                    raise
                if failure.kind == "bad-body":
                    raise self.error(self.redact(self.describe(failure, retried))) from None
                was_open = self.breaker.open
                self._count(failure, retried, checking)
                if self.breaker.open and not was_open:  # this failure stops the run: say why
                    raise self.error(self.breaker.reason) from None
                if failure.retryable and retried < self.config.retries \
                        and not self.breaker.open:
                    time.sleep(backoff_s(retried, failure.retry_after_s))
                    retried += 1
                    continue
                raise self.error(self.redact(self.describe(failure, retried))) from None
            self.breaker.success()
            self._called = self._called or not checking
            return result

    def _count(self, failure: Failure, retried: int, checking: bool) -> None:
        """Feed the breaker: a rejected key at once; the check's connection failures and
        timeouts once they outlast their retries; otherwise identical failures in a row."""
        if failure.kind == "auth":
            self._trip(failure, self.describe(failure, retried), 1)
            return
        if failure.status == 404 and not self._called and not checking:
            # No such model or endpoint (a retired id): every call would meet it as well. Not
            # the check's: a proxy may lack the check's route and still serve the model.
            self._trip(failure, self.describe(failure, retried), 1)
            return
        if failure.kind == "status":
            if failure.retryable and retried < self.config.retries:
                return
            if not failure.retryable and (self.breaker.succeeded or self.refusal(failure)):
                return
        if checking:
            if failure.kind in ("connection", "timeout") and retried >= self.config.retries:
                self._trip(failure, "checked before the first call: "
                           + self.describe(failure, retried), 1)
            return
        if self.breaker.failure(failure.signature) >= self.breaker.threshold:
            self._trip(failure, self.describe(failure, retried), self.breaker.threshold)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
