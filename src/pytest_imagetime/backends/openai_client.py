"""Talking to an OpenAI-compatible endpoint: loading the SDK, the key, the base URL, the
client, a check of the endpoint before the first call, transport retries, a circuit breaker,
the mapping of SDK exceptions, refusals and unusable answers to our errors, their wording, and
redaction of secrets.

Every caller of the ``openai`` package goes through ``open_endpoint`` and ``Endpoint``: the vlm
and question-chain judges, the batch judge, the order probe, the TempViz judge and the
``openai-images`` backend.

Who retries: this module, never the client (it is built with ``max_retries=0``), so that every
attempt is seen by the breaker, a message counts the retries that really happened, and a
request is sent at most ``1 + retries`` times. Retried: connection failures, timeouts, HTTP
408, 409, 429 and 5xx (or whatever the server marks with ``x-should-retry``), after the
server's ``retry-after-ms`` / ``retry-after`` when it gives one, else after an exponential
backoff with jitter. Never retried: any other status (400, 401, 403, 404, 422, ...) and a 429
that says the quota is used up.

The breaker stops new calls (and retries) for the rest of the process once the endpoint has
failed ``BREAKER_AFTER`` times in a row the same way: connection failures (confirmed by a
second check of the endpoint, so that a blip does not stop a run), timeouts, a rejected key,
or, before any call has succeeded, the same 4xx answer. Every call after that fails at once
with that one reason and what to check. Each pytest process (each xdist worker) has its own.
"""

from __future__ import annotations

import email.utils
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from ..rubric.judgment import JudgeError
from .registry import import_extra

RETRIED_STATUSES = frozenset({408, 409, 429})
BREAKER_AFTER = 5  # identical failures in a row that stop new calls
CHECK_TIMEOUT_S = 10.0  # the endpoint check's own timeout (at most the request timeout)
MAX_RETRY_AFTER_S = 60.0  # a longer retry-after is not waited for in full
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 8.0
# 429 bodies that mean "no money left", not "slow down": waiting does not help.
QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})
# Error codes with which an endpoint refuses one prompt or image: an answer about that item,
# never a sign that the endpoint is broken.
REFUSAL_CODES = frozenset({"moderation_blocked", "content_policy_violation", "content_filter"})
# A 401/403 on the model list that only says the key may not list models (restricted keys).
SCOPE_WORDS = ("scope", "permission")

T = TypeVar("T")
# Request ids and numbers in a server's message ("... request ID req_8f3a9c ...").
_IDS = re.compile(r"[A-Za-z0-9_\-]*\d[A-Za-z0-9_\-]*")

# ------------------------------------------------------------------ redaction

# A key shown partly masked, as OpenAI's 401 does: "sk-proj-********************abcd".
_MASKED_KEY = re.compile(r"[A-Za-z0-9_\-]*\*{4,}[A-Za-z0-9_\-]*")
_URL_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@]+@")
_SECRET_QUERY = re.compile(
    r"([?&](?:api[-_]?key|key|token|access[-_]?token|secret|sig|signature|password|pass|auth)"
    r"=)[^&#\s]+", re.IGNORECASE)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` without any of ``secrets``, partly masked keys, credentials in URLs or
    secret-looking query parameters."""
    for secret in secrets:
        if not secret or len(secret) < 6:
            continue
        text = text.replace(secret, "***")
        if len(secret) >= 12:  # a server may show the first and last characters only
            text = re.sub(re.escape(secret[:6]) + r"[A-Za-z0-9_\-]*(?:\.{3}|\u2026)"
                          r"[A-Za-z0-9_\-]*" + re.escape(secret[-4:]), "***", text)
    text = _MASKED_KEY.sub("***", text)
    text = _URL_USERINFO.sub(r"\1***@", text)
    return _SECRET_QUERY.sub(r"\1***", text)


def safe_url(url: str | None) -> str | None:
    """A base URL as it may be shown and stored: no user, password or secret parameters."""
    if url is None:
        return None
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    return redact(urlunsplit(parts._replace(netloc=netloc)))


# ------------------------------------------------------------------ the client


# Why a backend that was built only to name and price its calls refuses to make one.
NO_CALLS = "made for a session that makes no calls (--collect-only, --imagetime-dry-run)"


def base_url_of(option: str | None) -> str | None:
    """The endpoint a base-URL option names, else ``$OPENAI_BASE_URL``; None: the client's
    default (api.openai.com)."""
    return option or os.environ.get("OPENAI_BASE_URL") or None


def load_sdk(who: str, alternative: str = "") -> Any:
    """The ``openai`` package; ImportError saying how to install it (and what else to do)."""
    return import_extra("openai", "openai", who, alternative)


def api_key(key_env: str | None, who: str, hint: str, alternative: str = "") -> str | None:
    """The key from ``key_env``; None for servers without keys. Raises ValueError, naming
    the variable and how to name another (``hint``), when it is unset."""
    if key_env is None:
        return None
    key = os.environ.get(key_env)
    if not key:
        raise ValueError(f"{who} needs an API key in the environment variable {key_env} "
                         f"({hint})" + (f"; {alternative}" if alternative else ""))
    return key


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to call, and what to tell a user to check when it fails."""

    who: str  # "the judge endpoint"
    model: str
    base_url: str | None  # None: $OPENAI_BASE_URL, else api.openai.com (the client decides)
    api_key: str | None  # None: a server without keys
    key_env: str | None
    timeout_s: float
    retries: int  # transport retries of one request
    headers: Mapping[str, str] = field(default_factory=dict)
    # Option names for the hints, e.g. --imagetime-judge-base-url.
    base_url_option: str = "--imagetime-judge-base-url"
    key_option: str = "--imagetime-judge-key-env"
    model_option: str = "--imagetime-judge-model"
    timeout_option: str = "--imagetime-judge-timeout"
    params_option: str = "--imagetime-judge-param"
    # How a 400 refusing the request's content is worded; empty: as any other 400.
    refusal: str = ""

    @property
    def shown_url(self) -> str:
        return safe_url(self.base_url) or "https://api.openai.com/v1"


@dataclass(frozen=True)
class Failure:
    """One failed attempt, classified."""

    kind: str  # connection, timeout, auth, status, bad-body
    status: int | None
    message: str  # the server's own words (or the transport error)
    retryable: bool
    retry_after_s: float | None = None
    code: str = ""  # the error's code and type, as the body gives them

    @property
    def refusal(self) -> bool:
        return any(word in REFUSAL_CODES for word in self.code.split())

    @property
    def signature(self) -> str:
        """Failures with the same signature are "the same way" for the breaker: the same
        status and message, whatever request id or number the message carries."""
        if self.kind in ("connection", "timeout"):
            return self.kind
        return f"{self.status}: {_IDS.sub('#', self.message)}"


def server_message(body: object, fallback: str) -> str:
    """The error text of an error body in the shapes servers use: OpenAI and Azure
    ``{"error": {"message": ...}}``, vLLM ``{"error": "..."}`` or ``{"message": ...}``."""
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
        if body.get("message"):
            return str(body["message"])
        if body.get("detail"):
            return str(body["detail"])
    elif isinstance(body, str) and body.strip():
        return body
    return fallback


def _error_code(exc: Any) -> str:
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, Mapping) else None
    values = [getattr(exc, "code", None), getattr(exc, "type", None)]
    if isinstance(error, Mapping):
        values += [error.get("code"), error.get("type")]
    return " ".join(str(v) for v in values if v)


def retry_after(headers: Any) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, else ``retry-after`` (seconds or
    an HTTP date); None when it does not say."""
    if headers is None:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
    except (TypeError, ValueError):
        pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    when = email.utils.parsedate_tz(str(raw))
    if when is None:
        return None
    return max(0.0, email.utils.mktime_tz(when) - time.time())


def classify(sdk: Any, exc: BaseException) -> Failure | None:
    """What went wrong in one attempt; None for exceptions that are not the endpoint's."""
    if isinstance(exc, sdk.APITimeoutError):
        return Failure("timeout", None, "timed out", True)
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return Failure("connection", None, str(cause or exc) or type(cause).__name__, True)
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        headers = getattr(exc.response, "headers", None)
        message = " ".join(server_message(exc.body, str(exc.message)).split())
        code = _error_code(exc)
        if status == 429 and any(c in code for c in QUOTA_CODES):
            return Failure("auth", status, message, False, code=code)
        if status in (401, 403):
            return Failure("auth", status, message, False, code=code)
        should = (headers.get("x-should-retry") if headers is not None else None) or ""
        retryable = status in RETRIED_STATUSES or status >= 500
        if should.lower() in ("true", "false"):
            retryable = should.lower() == "true"
        return Failure("status", status, message, retryable, retry_after(headers), code)
    if isinstance(exc, (sdk.APIError, ValueError)):  # a body that is not what it should be
        return Failure("bad-body", None, str(exc), False)
    return None


def key_to_check(key_env: str | None, key_option: str) -> str:
    """What to check about the key when an endpoint rejects it."""
    return (f"the key in {key_env} ({key_option})" if key_env
            else f"whether the server needs a key ({key_option})")


def breaker_reason(who: str, failure_text: str, count: int, check: str) -> str:
    """Why a backend's calls stopped: what failed, how often, and what to check."""
    times = "once" if count == 1 else f"{count} times in a row"
    return (f"{who} failed {times} ({failure_text}); no more calls to it in this run. "
            f"Check {check}")


def backoff_s(retry: int, asked: float | None) -> float:
    """The wait before retry number ``retry`` (0 for the first)."""
    if asked is not None and asked <= MAX_RETRY_AFTER_S:
        return asked
    base = min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2.0 ** retry)
    return float(base * random.uniform(0.75, 1.0))


class Breaker:
    """Counts identical failures in a row; open for good once there are enough."""

    def __init__(self, threshold: int = BREAKER_AFTER) -> None:
        self.threshold = threshold
        self._lock = threading.Lock()
        self._signature: str | None = None
        self._count = 0
        self.succeeded = False  # any call succeeded in this process
        self.reason: str | None = None  # set once open

    @property
    def open(self) -> bool:
        return self.reason is not None

    def success(self) -> None:
        with self._lock:
            self.succeeded = True
            self._signature, self._count = None, 0

    def failure(self, signature: str) -> int:
        """Count one failure; the number of identical ones in a row."""
        with self._lock:
            if signature == self._signature:
                self._count += 1
            else:
                self._signature, self._count = signature, 1
            return self._count

    def count(self, signature: str) -> int:
        with self._lock:
            return self._count if signature == self._signature else 0

    def reset(self) -> None:
        with self._lock:
            self._signature, self._count = None, 0

    def trip(self, reason: str) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason


class Endpoint:
    """One thread-safe client and its breaker; ``call`` sends one request with retries."""

    def __init__(self, config: EndpointConfig, *, error: type[Exception],
                 bad_body: type[Exception] | None = None, sdk: Any = None,
                 check_first: bool = True) -> None:
        self.config = config
        self.error = error
        self.bad_body = bad_body or error
        self._sdk = sdk or load_sdk(config.who)
        self.breaker = Breaker()
        self._secrets = [config.api_key, *config.headers.values()]
        self._checked = not check_first
        self._check_lock = threading.Lock()
        self._listed: list[str] | None = None
        self.client: Any = self._sdk.OpenAI(
            api_key=config.api_key or "unused", base_url=config.base_url,
            timeout=config.timeout_s, max_retries=0,
            default_headers=dict(config.headers) or None)

    # ------------------------------------------------------------ wording

    def redact(self, text: str) -> str:
        return redact(text, self._secrets)

    def _retries_text(self, retried: int) -> str:
        return f" after {retried} retr{'y' if retried == 1 else 'ies'}" if retried else ""

    def describe(self, failure: Failure, retried: int) -> str:
        who, after = self.config.who, self._retries_text(retried)
        if failure.kind == "timeout":
            return f"{who} timed out ({self.config.timeout_s:g} s a request){after}"
        if failure.kind == "connection":
            return f"cannot reach {who} {self.config.shown_url}{after}: {_short(failure.message)}"
        if failure.kind == "bad-body":
            return f"{who}'s response is not valid JSON: {_short(failure.message)}"
        if self.config.refusal and failure.status == 400 and failure.refusal:
            return f"{self.config.refusal}: {_short(failure.message, 240)}"
        return f"HTTP {failure.status} from {who}{after}: {_short(failure.message)}"

    def _what_to_check(self, failure: Failure) -> str:
        c = self.config
        where = (f"the base URL {c.shown_url} ({c.base_url_option} or OPENAI_BASE_URL) and that "
                 f"the server is up and reachable from here (HTTPS_PROXY / NO_PROXY)")
        if failure.kind == "timeout":
            return (f"{where}; a server that is only slow needs a longer {c.timeout_option} or "
                    f"fewer calls at once")
        if failure.kind == "connection":
            return where
        if failure.kind == "auth":
            key = key_to_check(c.key_env, c.key_option)
            return (f"{key}, that it is a key for {c.shown_url}, and OPENAI_ORG_ID / "
                    f"OPENAI_PROJECT_ID if set")
        listed = ""
        if self._listed and c.model not in self._listed:
            shown = ", ".join(self._listed[:8]) + (", ..." if len(self._listed) > 8 else "")
            listed = f" (the endpoint lists {shown}; not {c.model!r})"
        return (f"the model name {c.model!r}{listed} ({c.model_option}), the request "
                f"parameters ({c.params_option}) and the base URL {c.shown_url}")

    def _trip(self, failure: Failure, text: str, count: int) -> None:
        self.breaker.trip(self.redact(
            breaker_reason(self.config.who, text, count, self._what_to_check(failure))))

    def _stopped(self) -> Exception:
        return self.error(f"not called: {self.breaker.reason}")

    # ------------------------------------------------------------ the check

    def ensure_checked(self) -> None:
        """Check the endpoint once, before the first call of this process (other callers
        wait for it)."""
        if self._checked:
            return
        with self._check_lock:
            if not self._checked:
                failure, retried = self.check()
                if failure is not None:
                    self._trip(failure, "checked with GET /models before the first call: "
                               + self.describe(failure, retried), 1)
                self._checked = True

    def check(self) -> tuple[Failure | None, int]:
        """GET /models, free at every provider: the endpoint answers, the key is accepted,
        and which models it lists. A failure that calls would meet as well (unreachable,
        hanging, key rejected) is returned with the retries made; anything else (no such
        route, 5xx) is left to the calls themselves."""
        client = self.client.with_options(
            timeout=min(self.config.timeout_s, CHECK_TIMEOUT_S), max_retries=0)
        failure: Failure | None = None
        for retry in range(self.config.retries + 1):
            try:
                page = client.models.list()
            except Exception as exc:  # the endpoint's failures are classified below
                failure = classify(self._sdk, exc)
                if failure is None:
                    raise
                if failure.kind == "auth":
                    scoped = any(w in failure.message.lower() for w in SCOPE_WORDS)
                    return (None if scoped else failure), retry
                if failure.kind not in ("connection", "timeout"):
                    return None, retry
                if retry < self.config.retries:
                    time.sleep(backoff_s(retry, None))
                continue
            self._listed = [str(getattr(m, "id", "")) for m in getattr(page, "data", []) or []]
            return None, retry
        return failure, self.config.retries

    # ------------------------------------------------------------ one request

    def call(self, send: Callable[[Any], T]) -> T:
        """``send(client)`` with retries; raises ``error`` (or ``bad_body`` for a body that is
        not JSON) with the reason, redacted."""
        self.ensure_checked()
        retried = 0
        while True:
            if self.breaker.open:
                raise self._stopped()
            try:
                result = send(self.client)
            except Exception as exc:  # the endpoint's failures are classified below
                failure = classify(self._sdk, exc)
                if failure is None:
                    raise
                if failure.kind == "bad-body":
                    raise self.bad_body(self.redact(self.describe(failure, retried))) from None
                was_open = self.breaker.open
                self._count(failure, retried)
                if self.breaker.open and not was_open and not failure.retryable:
                    raise self.error(self.breaker.reason) from None  # this one stops the run
                if failure.retryable and retried < self.config.retries \
                        and not self.breaker.open:
                    time.sleep(backoff_s(retried, failure.retry_after_s))
                    retried += 1
                    continue
                if self.breaker.open and retried < self.config.retries and failure.retryable:
                    raise self._stopped() from None
                raise self.error(self.redact(self.describe(failure, retried))) from None
            self.breaker.success()
            return result

    # ------------------------------------------------------------ calls outside ``call``

    def api_error(self, exc: BaseException) -> tuple[int | None, str] | None:
        """An SDK exception of a call made without retries (the Batch and Files APIs) as its
        HTTP status (None: it got no answer) and the server's own words, redacted; None for
        an exception that is not the SDK's."""
        if isinstance(exc, self._sdk.APIStatusError):
            message = server_message(getattr(exc, "body", None),
                                     str(getattr(exc, "message", exc)))
            return int(exc.status_code), self.redact(message)
        if isinstance(exc, self._sdk.APIError):
            return None, self.redact(str(exc))
        return None

    def chat_completion(self, body: Mapping[str, Any]) -> Any:
        """A Chat Completions response body (a batch's answer) as the SDK's object;
        InvalidAnswer when it is not one."""
        try:
            return self._sdk.types.chat.ChatCompletion.model_validate(dict(body))
        except Exception as exc:  # a body that is no chat completion: asked again
            raise InvalidAnswer(f"the batch answer is not a chat completion: "
                                f"{_short(str(exc), 240)}") from None

    def _count(self, failure: Failure, retried: int) -> None:
        """Feed the breaker: every attempt that failed the way a broken endpoint fails, a 429
        or 5xx that outlasted its retries, and the same 4xx answer while nothing has
        succeeded yet; a 404 then stops it at once."""
        if failure.kind == "status":
            if failure.retryable and retried < self.config.retries:
                return
            if not failure.retryable and (self.breaker.succeeded or failure.refusal):
                return
            if failure.status == 404:  # no such model or route: every call would meet it
                self._trip(failure, self.describe(failure, retried), 1)
                return
        if self.breaker.failure(failure.signature) < self.breaker.threshold:
            return
        if failure.kind == "connection":
            with self._check_lock:  # one confirmation at a time; the others wait for it
                if self.breaker.open or \
                        self.breaker.count(failure.signature) < self.breaker.threshold:
                    return
                if self.check()[0] is None:
                    self.breaker.reset()  # the endpoint answers again: it was a blip
                    return
        self._trip(failure, self.describe(failure, retried), self.breaker.threshold)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def open_endpoint(*, backend: str, who: str, model: str, base_url: str | None,
                  key_env: str | None, key_hint: str, timeout_s: float, retries: int,
                  headers: Mapping[str, str], error: type[Exception],
                  bad_body: type[Exception] | None = None, alternative: str = "",
                  **hints: str) -> Endpoint:
    """The endpoint a backend calls: the SDK (ImportError with the ``pip install``), the key
    from ``key_env`` (ValueError naming the variable), the base URL (``base_url_of``), one
    thread-safe client with its retries and breaker. ``backend`` names the backend in those
    errors, ``who`` the endpoint in the errors of calls; ``hints`` are EndpointConfig's option
    names and refusal wording."""
    # Imported here, at start-up: a missing package stops the run before any case runs, and
    # calling threads do not queue on the first import.
    sdk = load_sdk(backend, alternative)
    key = api_key(key_env, backend, key_hint, alternative)
    config = EndpointConfig(who=who, model=model, base_url=base_url_of(base_url), api_key=key,
                            key_env=key_env, timeout_s=timeout_s, retries=retries,
                            headers=dict(headers), **hints)
    return Endpoint(config, error=error, bad_body=bad_body, sdk=sdk)


# ------------------------------------------------------------------ answers


class InvalidAnswer(JudgeError):
    """The endpoint answered, but not with a usable answer: worth asking again."""


def usage_tokens(response: Any) -> tuple[int, int, int]:
    """Prompt, completion and cached prompt tokens a response reports (0 where it reports
    none)."""
    usage = getattr(response, "usage", None)
    return (int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0), cached_tokens(usage))


def cached_tokens(usage: Any) -> int:
    """Input tokens the provider read from its prompt cache
    (``usage.prompt_tokens_details.cached_tokens``; 0 where a server does not say)."""
    details = getattr(usage, "prompt_tokens_details", None)
    if isinstance(details, Mapping):
        return int(details.get("cached_tokens") or 0)
    return int(getattr(details, "cached_tokens", 0) or 0)


def message_content(choice: Any, who: str) -> str:
    """A choice's text; InvalidAnswer for a choice without a message, a refusal or an answer
    cut off."""
    message = getattr(choice, "message", None)
    if message is None:
        raise InvalidAnswer("the answer's choice has no message")
    refusal = getattr(message, "refusal", None)
    if refusal:
        raise InvalidAnswer(f"{who} refused: {_short(refusal, 240)}")
    if getattr(choice, "finish_reason", None) == "length":
        raise InvalidAnswer("the answer was cut off (finish_reason=length)")
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


def first_choice(response: Any) -> Any:
    """A response's first choice; InvalidAnswer for a response without choices."""
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise InvalidAnswer("the response has no choices")
    return choices[0]


def message_text(response: Any, who: str = "the model") -> str:
    """The answer's text; InvalidAnswer for no choices, a choice without a message, a refusal
    or a cut-off answer."""
    return message_content(first_choice(response), who)
