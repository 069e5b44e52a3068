"""Judge ``vlm``: a vision-language model behind any OpenAI-compatible Chat Completions API.

Works against OpenAI and against servers a team runs itself (vLLM, Ollama, LM Studio,
llama.cpp's server) through ``--imagetime-judge-base-url``. The answer must match a JSON
Schema (structured outputs) and the case; an invalid answer is asked again a bounded number
of times (``reasks``) and then fails the item as an error with the reason, never as a score.
Transport failures (429 with Retry-After, 5xx, timeouts, resets) are retried ``retries`` times
by ``openai_client.Endpoint``, which also checks the endpoint before the first call and stops
calling one that fails the same way again and again; what still fails is an error with its
reason. Worst case per sheet: (reasks + 1) x (retries + 1) requests.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import io
import json
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jsonschema
from PIL import Image

from ..backends.openai_client import (
    NO_CALLS,
    Endpoint,
    InvalidAnswer,
    base_url_of,
    first_choice,
    message_content,
    open_endpoint,
    safe_url,
    usage_tokens,
)
from ..backends.prices import Price, known_cost, price_for
from ..cases.model import Case
from ..rubric.facts import ALL_DIMS, C_DIMS, D_DIMS, RUBRIC_VERSION, Setting
from ..rubric.judgment import JudgeError, Judgment, Verdict, validate_judgment
from .base import Judge, JudgeOptions, SheetToJudge
from .prompt import (
    FORBIDDEN_VERDICTS,
    PREDICATE_VERDICTS,
    PROMPT_VERSION,
    SchemaKey,
    case_text,
    prompt_template,
    prompt_template_sha256,
    response_format,
    response_schema,
    schema_for_key,
    schema_key,
    system_prompt,
)

OFFLINE_HINT = "to score offline use --imagetime-judge=pixel"


KEY_HINT = ("or --imagetime-judge-key-env=NAME for another variable, 'none' for a server "
            "without keys")


def endpoint_for(options: JudgeOptions, *, backend: str, who: str = "the judge endpoint",
                 key_hint: str = KEY_HINT, alternative: str = "", **hints: str) -> Endpoint:
    """The endpoint the judge options name (see ``open_endpoint``); an unusable answer is an
    InvalidAnswer, any other failure a JudgeError."""
    return open_endpoint(
        backend=backend, who=who, model=options.model, base_url=options.base_url,
        key_env=options.key_env, key_hint=key_hint, timeout_s=options.timeout_s,
        retries=options.retries, headers=options.headers, error=JudgeError,
        bad_body=InvalidAnswer, alternative=alternative, **hints)


def image_data_url(image: Image.Image, stored: Path | None = None) -> str:
    """The sheet as a PNG data URL: the stored file's bytes when there is one (no re-encoding),
    else a fresh encoding."""
    data = None
    if stored is not None:
        try:
            data = stored.read_bytes()
        except OSError:
            data = None
    return png_data_url(image, data)


def png_data_url(image: Image.Image, data: bytes | None) -> str:
    """``data`` as a PNG data URL when it is a PNG file's bytes (no re-encoding), else
    ``image`` freshly encoded."""
    if data is None or not data.startswith(b"\x89PNG"):
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG")
        data = buffer.getvalue()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


@functools.lru_cache(maxsize=256)
def _validator_of(key: SchemaKey) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema_for_key(*key))


def _answer_validator(case: Case, setting: Setting) -> jsonschema.Draft202012Validator:
    """A validator of this case's answer schema, shared by cases alike in ids and nulls."""
    return _validator_of(schema_key(case, setting))


class VlmJudge(Judge):
    """Scores every C and D dimension, every predicate and forbidden state of a case."""

    def __init__(self, argument: str | None = None, *,
                 options: JudgeOptions | None = None) -> None:
        self.options = options or JudgeOptions()
        self.model = argument or self.options.model
        if self.model != self.options.model:
            self.options = dataclasses.replace(self.options, model=self.model)
        self._price: Price | None = price_for(self.model, self.options.price_per_mtok,
                                             self.options.prices_file)
        self.api_key: str | None = None
        self._endpoint: Endpoint | None = None
        if not self.options.calls:  # it only names, describes and prices its judgments
            return
        self._endpoint = endpoint_for(self.options, backend="the vlm judge",
                                      alternative=OFFLINE_HINT)
        self.api_key = self._endpoint.config.api_key

    @property
    def name(self) -> str:
        return "vlm"

    @property
    def scored_dims(self) -> frozenset[str]:
        return frozenset(ALL_DIMS)

    calls_a_model = True

    @property
    def price(self) -> Price | None:
        return self._price

    @property
    def response_format(self) -> str:
        return self.options.response_format

    def prompt_template(self) -> str:
        """The prompt's text, kept with the run (``judge_prompt.txt``)."""
        return prompt_template()

    def config(self) -> Mapping[str, Any]:
        return {"judge": "vlm", "judge_model": self.model, "base_url": self.base_url,
                "prompt_version": PROMPT_VERSION, "rubric_version": RUBRIC_VERSION,
                "prompt_template_sha256": prompt_template_sha256(),
                "params": dict(self.options.params), "response_format":
                self.options.response_format,
                "price_usd_per_mtok": self.price.per_mtok() if self.price else None}

    @property
    def base_url(self) -> str | None:
        """The endpoint as shown and stored: credentials in it are masked."""
        return safe_url(base_url_of(self.options.base_url))

    @property
    def endpoint(self) -> Endpoint:
        if self._endpoint is None:
            raise JudgeError(f"the vlm judge was {NO_CALLS}")
        return self._endpoint

    def client(self) -> Any:
        """One client for every judge thread (it is thread-safe and pools connections)."""
        return self.endpoint.client

    # ------------------------------------------------------------ one judgment

    def messages(self, sheet: SheetToJudge) -> list[dict[str, Any]]:
        """The system prompt, then what every case shares, then the case: a prefix that is
        byte-identical across calls, which the provider's prompt cache bills at its cached
        rate."""
        content: list[dict[str, Any]] = [
            {"type": "text", "text": case_text(sheet.case, sheet.setting)}]
        if self.options.response_format == "json_object":
            content.append({"type": "text",
                            "text": _json_object_instruction(sheet.case, sheet.setting)})
        if sheet.setting == "scaffold" and sheet.reference is not None:
            content.append({"type": "image_url",
                            "image_url": {"url": image_data_url(sheet.reference)}})
        content.append({"type": "image_url",
                        "image_url": {"url": image_data_url(sheet.image, sheet.path),
                                      "detail": "high"}})
        return [{"role": "system", "content": system_prompt()},
                {"role": "user", "content": content}]

    def request(self, sheet: SheetToJudge) -> dict[str, Any]:
        """The Chat Completions request for one sheet: model, messages, response format and
        the extra parameters (``--imagetime-judge-param``)."""
        request: dict[str, Any] = {"model": self.model, "messages": self.messages(sheet),
                                   "response_format": response_format(
                                       self.options.response_format, sheet.case,
                                       sheet.setting)}
        request.update(self.options.params)
        return request

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        request = self.request(sheet)
        problems: list[str] = []
        tokens_in = tokens_out = tokens_cached = 0
        started = time.perf_counter()
        # Transport failures were already retried by the endpoint: they end here. An answer
        # that arrived but is unusable (InvalidAnswer) is asked for again.
        for _attempt in range(self.options.reasks + 1):
            try:
                response = self._call(request)
                used_in, used_out, used_cached = usage_tokens(response)
                tokens_in += used_in
                tokens_out += used_out
                tokens_cached += used_cached
                return self.answer(response, sheet.case, sheet.setting,
                                   (tokens_in, tokens_out, tokens_cached),
                                   time.perf_counter() - started)
            except InvalidAnswer as exc:
                problems.append(self._redact(str(exc)))
        raise JudgeError(f"no valid judgment after {len(problems)} attempts: "
                         + " | ".join(problems))

    def answer(self, response: Any, case: Case, setting: Setting,
               tokens: tuple[int, int, int], latency: float, batch: bool = False) -> Judgment:
        """The judgment in one response, checked against the schema and the case; raises
        InvalidAnswer when it is not usable. ``tokens`` (in, out, cached) are every
        attempt's, priced at the Batch API's rates when ``batch``."""
        judgment = self._parse(response, case, setting, tokens, latency, batch)
        try:
            validate_judgment(judgment, case, setting, self.scored_dims)
        except JudgeError as exc:
            raise InvalidAnswer(str(exc)) from None
        return judgment

    def _call(self, request: dict[str, Any]) -> Any:
        return self.endpoint.call(lambda client: client.chat.completions.create(**request))

    def _parse(self, response: Any, case: Case, setting: Setting,
               tokens: tuple[int, int, int], latency: float, batch: bool = False) -> Judgment:
        """The judgment in ``response``; ``tokens`` (in, out, cached) are every attempt's,
        priced at the Batch API's rates when ``batch``."""
        tokens_in, tokens_out, tokens_cached = tokens
        choice = first_choice(response)
        content = message_content(choice, "the judge")
        try:
            answer = json.loads(content)
        except ValueError:
            raise InvalidAnswer(f"the answer is not JSON: {_short(content)!r}") from None
        errors = sorted(_answer_validator(case, setting).iter_errors(answer),
                        key=lambda e: list(map(str, e.absolute_path)))
        if errors:
            first = errors[0]
            where = "/".join(map(str, first.absolute_path)) or "(root)"
            raise InvalidAnswer(f"the answer does not match the schema at {where}: "
                                f"{_short(first.message)}")
        scores: dict[str, int | None] = {d: answer["capability"][d]["score"] for d in C_DIMS}
        layout = dict(answer["layout"])
        # The panel parse can contradict the layout answer: an unreadable panel is unreadable.
        layout["all_panels_readable"] = (layout["all_panels_readable"]
                                         and all(p["readable"] for p in answer["panels"]))
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
                 "finish_reason": getattr(choice, "finish_reason", None)},
            date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            latency_s=round(latency, 3), tokens_in=tokens_in, tokens_out=tokens_out,
            tokens_cached=tokens_cached,
            cost_usd=known_cost(self.price, tokens_in, tokens_out, tokens_cached, batch),
            evaluates_predicates=True, layout=layout,
        )

    def _redact(self, text: str) -> str:
        """The key never leaves this object: not in errors, logs or reports."""
        return text if self._endpoint is None else self._endpoint.redact(text)


def _json_object_instruction(case: Case, setting: Setting) -> str:
    """The case's answer schema in the message, for servers without structured outputs."""
    return ("Answer with a JSON object matching this JSON Schema:\n"
            + json.dumps(response_schema(case, setting)))


def _short(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."
