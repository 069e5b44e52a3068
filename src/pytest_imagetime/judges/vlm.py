"""Judge ``vlm``: a vision-language model behind any OpenAI-compatible Chat Completions API.

Works against OpenAI and against servers a team runs itself (vLLM, Ollama, LM Studio,
llama.cpp's server) through ``--imagetime-judge-base-url``. The answer must match a JSON
Schema (structured outputs) and the case; an invalid answer is asked again a bounded number
of times and then fails the item as an error with the reason, never as a score.
Transport failures (429 with Retry-After, 5xx, timeouts, resets) are retried by the client
with exponential backoff; what still fails becomes an error with its reason.
"""

from __future__ import annotations

import base64
import functools
import io
import json
import os
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jsonschema
from PIL import Image

from ..judgment import JudgeError, Judgment, Verdict, validate_judgment
from ..rubric import ALL_DIMS, C_DIMS, D_DIMS, RUBRIC_VERSION
from .base import JudgeOptions, SheetToJudge
from .prices import Price, cost_usd, price_for
from .prompt import (
    FORBIDDEN_VERDICTS,
    PREDICATE_VERDICTS,
    PROMPT_VERSION,
    case_text,
    response_format,
    response_schema,
    system_prompt,
)

INSTALL_HINT = "pip install 'pytest-imagetime[openai]'"
NO_CALLS = "made for a session that makes no calls (--collect-only, --imagetime-dry-run)"


class InvalidAnswer(JudgeError):
    """The judge answered, but not with a usable judgment: worth asking again."""


def _openai() -> Any:
    try:
        import openai
    except ImportError:
        raise ImportError(f"the vlm judge needs the openai package: {INSTALL_HINT}; to score "
                          f"offline use --imagetime-judge=pixel") from None
    return openai


def image_data_url(image: Image.Image, stored: Path | None = None) -> str:
    """The sheet as a PNG data URL: the stored file's bytes when there is one (no re-encoding),
    else a fresh encoding."""
    data = None
    if stored is not None:
        try:
            data = stored.read_bytes()
        except OSError:
            data = None
    if data is None or not data.startswith(b"\x89PNG"):
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG")
        data = buffer.getvalue()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


@functools.cache
def _answer_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(response_schema())


class VlmJudge:
    """Scores every C and D dimension, every predicate and forbidden state of a case."""

    def __init__(self, argument: str | None = None, *,
                 options: JudgeOptions | None = None) -> None:
        self.options = options or JudgeOptions()
        self.model = argument or self.options.model
        self.price: Price | None = price_for(self.model, self.options.price_per_mtok,
                                             self.options.prices_file)
        self.api_key: str | None = None
        self._client: Any = None
        if not self.options.calls:  # it only names, describes and prices its judgments
            return
        # Imported here, at start-up: a missing package stops the run before any image is
        # generated, and judge threads do not queue on the first import.
        self._sdk = _openai()
        self.api_key = self._api_key()
        self._client = self._sdk.OpenAI(
            api_key=self.api_key or "unused", base_url=self.base_url,
            timeout=self.options.timeout_s, max_retries=self.options.retries)

    def _api_key(self) -> str | None:
        env = self.options.key_env
        if env is None:
            return None
        key = os.environ.get(env)
        if not key:
            raise ValueError(f"the vlm judge needs an API key in the environment variable {env} "
                             f"(or --imagetime-judge-key-env=NAME for another variable, 'none' "
                             f"for a server without keys); to score offline use "
                             f"--imagetime-judge=pixel")
        return key

    @property
    def name(self) -> str:
        return "vlm"

    @property
    def scored_dims(self) -> frozenset[str]:
        return frozenset(ALL_DIMS)

    def config(self) -> Mapping[str, Any]:
        return {"judge": "vlm", "judge_model": self.model, "base_url": self.base_url,
                "prompt_version": PROMPT_VERSION, "rubric_version": RUBRIC_VERSION,
                "params": dict(self.options.params), "response_format":
                self.options.response_format,
                "price_usd_per_mtok": list(self.price) if self.price else None}

    @property
    def base_url(self) -> str | None:
        return self.options.base_url or os.environ.get("OPENAI_BASE_URL") or None

    def client(self) -> Any:
        """One client for every judge thread (it is thread-safe and pools connections)."""
        return self._client

    # ------------------------------------------------------------ one judgment

    def messages(self, sheet: SheetToJudge) -> list[dict[str, Any]]:
        text = case_text(sheet.case, sheet.setting)
        if self.options.response_format == "json_object":
            text += ("\nAnswer with a JSON object matching this JSON Schema:\n"
                     + json.dumps(response_schema()))
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if sheet.setting == "scaffold" and sheet.reference is not None:
            content.append({"type": "image_url",
                            "image_url": {"url": image_data_url(sheet.reference)}})
        content.append({"type": "image_url",
                        "image_url": {"url": image_data_url(sheet.image, sheet.path),
                                      "detail": "high"}})
        return [{"role": "system", "content": system_prompt()},
                {"role": "user", "content": content}]

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        if self._client is None:
            raise JudgeError(f"the vlm judge was {NO_CALLS}")
        messages = self.messages(sheet)
        problems: list[str] = []
        tokens_in = tokens_out = 0
        started = time.perf_counter()
        # Transport failures were already retried by the client: they end here. An answer
        # that arrived but is unusable (InvalidAnswer) is asked for again.
        for _attempt in range(self.options.retries + 1):
            try:
                response = self._call(messages)
                usage = getattr(response, "usage", None)
                tokens_in += int(getattr(usage, "prompt_tokens", 0) or 0)
                tokens_out += int(getattr(usage, "completion_tokens", 0) or 0)
                judgment = self._parse(response, sheet, tokens_in, tokens_out,
                                       time.perf_counter() - started)
                try:
                    validate_judgment(judgment, sheet.case, sheet.setting, self.scored_dims)
                except JudgeError as exc:
                    raise InvalidAnswer(str(exc)) from None
            except InvalidAnswer as exc:
                problems.append(self._redact(str(exc)))
                continue
            return judgment
        raise JudgeError(f"no valid judgment after {len(problems)} attempts: "
                         + " | ".join(problems))

    def _call(self, messages: list[dict[str, Any]]) -> Any:
        openai = self._sdk
        request: dict[str, Any] = {"model": self.model, "messages": messages,
                                   "response_format": response_format(
                                       self.options.response_format)}
        request.update(self.options.params)
        try:
            return self.client().chat.completions.create(**request)
        except openai.APIStatusError as exc:
            raise JudgeError(self._redact(f"HTTP {exc.status_code} from the judge endpoint "
                                          f"after {self.options.retries} retries: "
                                          f"{_short(exc.message)}")) from None
        except openai.APITimeoutError:
            raise JudgeError(f"the judge endpoint timed out ({self.options.timeout_s:g} s, "
                             f"{self.options.retries} retries)") from None
        except openai.APIConnectionError as exc:
            raise JudgeError(self._redact(f"cannot reach the judge endpoint "
                                          f"{self.base_url or 'api.openai.com'}: {exc}")
                             ) from None
        except openai.APIError as exc:
            raise JudgeError(self._redact(f"bad response from the judge endpoint: "
                                          f"{_short(str(exc))}")) from None
        except ValueError as exc:  # a response body that is not JSON
            raise InvalidAnswer(f"the response body is not JSON: {_short(str(exc))}") from None

    def _parse(self, response: Any, sheet: SheetToJudge, tokens_in: int, tokens_out: int,
               latency: float) -> Judgment:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise InvalidAnswer("the response has no choices")
        choice = choices[0]
        message = choice.message
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise InvalidAnswer(f"the judge refused: {_short(refusal)}")
        if choice.finish_reason == "length":
            raise InvalidAnswer("the answer was cut off (finish_reason=length)")
        content = message.content or ""
        try:
            answer = json.loads(content)
        except ValueError:
            raise InvalidAnswer(f"the answer is not JSON: {_short(content)!r}") from None
        errors = sorted(_answer_validator().iter_errors(answer),
                        key=lambda e: list(map(str, e.absolute_path)))
        if errors:
            first = errors[0]
            where = "/".join(map(str, first.absolute_path)) or "(root)"
            raise InvalidAnswer(f"the answer does not match the schema at {where}: "
                                f"{_short(first.message)}")
        scores: dict[str, int | None] = {d: answer["capability"][d]["score"] for d in C_DIMS}
        scores.update({d: answer["diagnostic"][d] for d in D_DIMS})
        return Judgment(
            judge="vlm", judge_model=self.model, rubric_version=RUBRIC_VERSION,
            prompt_version=PROMPT_VERSION, scores=scores,
            confidence={d: answer["capability"][d]["confidence"] for d in C_DIMS},
            predicates=tuple(Verdict(v["id"], PREDICATE_VERDICTS[v["verdict"]], v["evidence"])
                             for v in answer["predicates"]),
            forbidden=tuple(Verdict(v["id"], FORBIDDEN_VERDICTS[v["verdict"]], v["evidence"])
                            for v in answer["forbidden"]),
            labels=tuple(dict.fromkeys(answer["failure_labels"])),
            rationale=answer["rationale"],
            raw={"content": content, "id": getattr(response, "id", None),
                 "model": getattr(response, "model", None),
                 "finish_reason": choice.finish_reason},
            date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            latency_s=round(latency, 3), tokens_in=tokens_in, tokens_out=tokens_out,
            cost_usd=cost_usd(self.price, tokens_in, tokens_out),
            evaluates_predicates=True,
        )

    def _redact(self, text: str) -> str:
        """The key never leaves this object: not in errors, logs or reports."""
        if self.api_key:
            text = text.replace(self.api_key, "***")
        return text


def _short(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
