"""Model ``gemini-image``: Gemini's native image generation through the ``google-genai`` SDK,
with a Gemini API key (``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``) or on Vertex AI (a project,
a location and application default credentials); Nano Banana 2
(``gemini-3.1-flash-image-preview``), the model the ImageTime paper evaluates, by default.

``gemini-image[:MODEL][:key=value,...]``. One ``generate_content`` request per sheet asks for
an image only (``response_modalities=["IMAGE"]``), square (``aspect_ratio="1:1"``), with the
case's seed and the least thinking the model takes; the first image part is kept. A prompt or
an image the API blocks is an item error with its block or finish reason. The SDK never
retries here: ``hosted_calls`` does, as for every hosted backend.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from PIL import Image

from ..backends.hosted_calls import HostedCalls
from ..backends.openai_client import Failure, server_message
from ..backends.registry import import_extra
from .base import Generated, GenerationRequest, ModelError, ModelOptions
from .hosted import HostedModel
from .keys import key_env_named, key_env_of, read_key
from .openai_images import cost_usd, decode_image, price_for
from .overrides import Converter, boolean, choice

DEFAULT_MODEL = "gemini-3.1-flash-image-preview"  # Nano Banana 2
DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
DEFAULT_LOCATION = "global"  # where Vertex AI serves Gemini 3.1 Flash Image
# The scope the SDK asks application default credentials for on Vertex AI.
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# The error details with which the API rejects a key (it answers 400, not 401).
KEY_REASONS = ("API_KEY_INVALID", "API_KEY_EXPIRED", "API_KEY_SERVICE_BLOCKED")
# Finish reasons with which a candidate is withheld for what it shows or was asked for.
BLOCKED = ("SAFETY", "IMAGE_SAFETY", "PROHIBITED_CONTENT", "IMAGE_PROHIBITED_CONTENT",
           "BLOCKLIST", "SPII", "RECITATION", "IMAGE_RECITATION")

OVERRIDES: Mapping[str, Converter] = {
    "image_size": choice("512", "1K", "2K", "4K"),
    # minimal: the single pass; "none" sends no thinking configuration (older image models).
    "thinking": choice("minimal", "low", "medium", "high", "none"),
    "send_seed": boolean,
    "vertex": boolean,
    "project": str,
    "location": str,
}


def load_genai() -> Any:
    """The ``google.genai`` package; ImportError with the ``pip install`` for it."""
    return import_extra("gemini", "google.genai", "the gemini-image model")


def application_default_credentials() -> Any:
    """Google's application default credentials with the scope the SDK asks for, resolved
    once at start-up: without them every request would fail on its first call. ValueError
    saying how to provide them when there are none."""
    auth = import_extra("gemini", "google.auth", "the gemini-image model on Vertex AI")
    try:
        credentials, _ = auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
    except auth.exceptions.DefaultCredentialsError as exc:
        reason = " ".join(str(exc).split())
        raise ValueError(
            f"the gemini-image model on Vertex AI needs Google application default "
            f"credentials, and none were found ({reason}): run 'gcloud auth "
            f"application-default login', or set GOOGLE_APPLICATION_CREDENTIALS to a service "
            f"account's key file") from None
    return credentials


def _type_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def retry_delay(details: Any) -> float | None:
    """The wait a ``google.rpc.RetryInfo`` detail asks for (``"20s"``); None without one."""
    error = details.get("error", details) if isinstance(details, Mapping) else None
    for item in (error.get("details") or []) if isinstance(error, Mapping) else []:
        delay = item.get("retryDelay") if isinstance(item, Mapping) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None


def _reasons(details: Any) -> str:
    error = details.get("error", details) if isinstance(details, Mapping) else None
    items = (error.get("details") or []) if isinstance(error, Mapping) else []
    return " ".join(str(item.get("reason")) for item in items
                    if isinstance(item, Mapping) and item.get("reason"))


def classify(genai: Any, exc: BaseException) -> Failure | None:
    """What went wrong in one SDK call; None for exceptions that are not the API's."""
    names = _type_names(exc)
    if "TimeoutException" in names or isinstance(exc, TimeoutError):
        return Failure("timeout", None, "timed out", True)
    if names & {"TransportError", "NetworkError", "ConnectError", "RemoteProtocolError"} \
            or isinstance(exc, ConnectionError):
        return Failure("connection", None, str(exc) or type(exc).__name__, True)
    if isinstance(exc, genai.errors.APIError):
        status = int(exc.code or 0)
        message = " ".join(server_message(exc.details, str(exc.message or exc)).split())
        code = " ".join(filter(None, (str(exc.status or ""), _reasons(exc.details))))
        if status in (401, 403) or any(reason in code for reason in KEY_REASONS):
            return Failure("auth", status, message, False, code=code)
        retryable = status in (408, 409, 429) or status >= 500
        return Failure("status", status, message, retryable, retry_delay(exc.details), code)
    if isinstance(exc, ValueError):  # a body that is not the JSON it should be
        return Failure("bad-body", None, str(exc), False)
    return None


class GeminiImageModel(HostedModel):
    """One square motion sheet per request from Gemini's native image generation."""

    backend = "gemini-image"
    default_base_url = DEFAULT_BASE_URL

    def __init__(self, argument: str | None = None, *, name: str = "gemini-image",
                 options: ModelOptions | None = None) -> None:
        super().__init__(argument, name, options, default_model=DEFAULT_MODEL,
                         converters=OVERRIDES)
        self.price = price_for(self.model)
        self._client: Any = None
        if not self.options.calls:  # it only names and describes its sheets
            return
        # Imported at start-up: a missing package stops the run before any case runs.
        self._genai = load_genai()
        key_env, key, credentials = self._credentials()
        http_options = self._genai.types.HttpOptions(
            base_url=self.options.base_url or None, timeout=int(self.options.timeout_s * 1000),
            headers=dict(self.options.headers) or None)
        if self.vertex:
            self._client = self._genai.Client(
                vertexai=True, project=self.project, location=self.location,
                credentials=application_default_credentials(), http_options=http_options)
        else:
            self._client = self._genai.Client(api_key=key or "unused",
                                              http_options=http_options)
        self._calls = HostedCalls(
            self.calls_config("the Gemini API", key_env, key, name, credentials),
            error=ModelError, classify=lambda exc: classify(self._genai, exc),
            check=self._check_model)

    def _credentials(self) -> tuple[str | None, str | None, str]:
        """The key variable, the key, and what else to check when it is rejected."""
        if self.vertex:
            if not self.project:
                raise ValueError("the gemini-image model on Vertex AI needs a project: "
                                 "gemini-image:vertex=true,project=ID or GOOGLE_CLOUD_PROJECT")
            return None, None, (" (Vertex AI: application default credentials, gcloud auth "
                                "application-default login, GOOGLE_APPLICATION_CREDENTIALS)")
        key_env = key_env_of(self.options, *KEY_ENVS)
        named = key_env_named(self.options)
        # Both variables are read unless the user named one, so the message names both.
        also = () if named else KEY_ENVS[1:]
        return key_env, read_key(key_env, "the gemini-image model", also, named=named), ""

    @property
    def vertex(self) -> bool:
        return bool(self.overrides.get("vertex",
                                       os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower()
                                       in ("1", "true")))

    @property
    def project(self) -> str | None:
        return self.overrides.get("project") or os.environ.get("GOOGLE_CLOUD_PROJECT")

    @property
    def location(self) -> str:
        return str(self.overrides.get("location") or os.environ.get("GOOGLE_CLOUD_LOCATION")
                   or DEFAULT_LOCATION)

    @property
    def base_url(self) -> str:
        if self.vertex and not self.options.base_url:
            host = "aiplatform.googleapis.com"
            return f"https://{host if self.location == 'global' else self.location + '-' + host}"
        return super().base_url

    def config(self) -> Mapping[str, Any]:
        where = {"project": self.project, "location": self.location} if self.vertex else {}
        return {**super().config(), "api": "vertex" if self.vertex else "gemini", **where}

    def _check_model(self) -> None:
        """GET the model, free: the API answers, the key is accepted, the model exists."""
        self._client.models.get(model=self.model)

    def request_config(self, request: GenerationRequest) -> dict[str, Any]:
        """The ``GenerateContentConfig`` fields of one sheet."""
        fields: dict[str, Any] = {
            "response_modalities": ["IMAGE"], "candidate_count": 1,
            "image_config": {"aspect_ratio": "1:1",
                             "image_size": self.overrides.get("image_size", "1K")},
        }
        thinking = self.overrides.get("thinking", "minimal")
        if thinking != "none":
            fields["thinking_config"] = {"thinking_level": thinking.upper(),
                                         "include_thoughts": False}
        if self.overrides.get("send_seed", True):
            fields["seed"] = request.seed
        return fields

    def generate(self, *, request: GenerationRequest) -> Generated:
        started = time.perf_counter()
        fields = self.request_config(request)
        types = self._genai.types
        # Typed parts: the SDK renames the fields of its own types only (thinkingLevel, ...).
        config = types.GenerateContentConfig(**{
            **fields, "image_config": types.ImageConfig(**fields["image_config"]),
            **({"thinking_config": types.ThinkingConfig(**fields["thinking_config"])}
               if "thinking_config" in fields else {})})
        response = self.calls.call(lambda: self._client.models.generate_content(
            model=self.model, contents=request.text, config=config))
        raw, mime, count = self._first_image(response)
        image = decode_image(raw)
        details = self._details(request, fields, response, image)
        details.update(mime_type=mime, images_returned=count,
                       seconds=round(time.perf_counter() - started, 3))
        return Generated(image, details, data=raw)

    def _first_image(self, response: Any) -> tuple[bytes, str | None, int]:
        """The first image part (thoughts skipped), its type and how many images came; a
        blocked prompt or candidate is an error with the API's reason."""
        feedback = getattr(response, "prompt_feedback", None)
        blocked = getattr(feedback, "block_reason", None)
        if blocked:
            message = getattr(feedback, "block_reason_message", None) or "no message"
            raise ModelError(f"the Gemini API blocked the prompt (content policy, "
                             f"{_name(blocked)}): {message}")
        candidates = getattr(response, "candidates", None) or []
        if not candidates:
            raise ModelError("the Gemini API answered without a candidate")
        candidate = candidates[0]
        parts = getattr(getattr(candidate, "content", None), "parts", None) or []
        images = [p.inline_data for p in parts
                  if getattr(p, "inline_data", None) is not None and not getattr(p, "thought",
                                                                                 False)
                  and getattr(p.inline_data, "data", None)]
        finish = _name(getattr(candidate, "finish_reason", None))
        if not images:
            message = getattr(candidate, "finish_message", None) or "no message given"
            if finish in BLOCKED:
                raise ModelError(f"the Gemini API withheld the image (content policy, "
                                 f"{finish}): {message}")
            raise ModelError(f"the Gemini API answered without an image (finish reason "
                             f"{finish or 'none'}): {message}")
        return bytes(images[0].data), getattr(images[0], "mime_type", None), len(images)

    def _details(self, request: GenerationRequest, fields: Mapping[str, Any], response: Any,
                 image: Image.Image) -> dict[str, Any]:
        usage = getattr(response, "usage_metadata", None)
        plain = usage.model_dump(exclude_none=True, mode="json") if usage is not None else None
        details: dict[str, Any] = {
            "model": self.model, "model_version": getattr(response, "model_version", None),
            "api": "vertex" if self.vertex else "gemini", **self.overrides,
            "image_size": fields["image_config"]["image_size"],
            "thinking": self.overrides.get("thinking", "minimal"),
            "requested_size": request.size, "returned_size": [image.width, image.height],
            "seed": request.seed, "seed_sent": "seed" in fields,
            "response_id": getattr(response, "response_id", None), "usage": plain,
            "finish_reason": _name(getattr((response.candidates or [None])[0],
                                           "finish_reason", None)),
        }
        details.update(self._cost(usage))
        return details

    def _cost(self, usage: Any) -> dict[str, Any]:
        if usage is None:
            return {"cost_usd": None, "cost_note": "the API reported no token usage"}
        if self.price is None:
            return {"cost_usd": None,
                    "cost_note": f"no price for {self.model!r} in image_prices.json"}
        tokens = token_counts(usage)
        return {"cost_usd": round(cost_usd(self.price, tokens), 6), "tokens": tokens}


def token_counts(usage: Any) -> dict[str, int]:
    """The reported usage by priced kind: the prompt as text (and image) input, image output
    tokens as image output, other output and thoughts as text output."""
    def by_modality(items: Any) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in items or []:
            kind = _name(getattr(item, "modality", None))
            counts[kind] = counts.get(kind, 0) + int(getattr(item, "token_count", 0) or 0)
        return counts

    prompt = int(getattr(usage, "prompt_token_count", 0) or 0)
    output = int(getattr(usage, "candidates_token_count", 0) or 0)
    thoughts = int(getattr(usage, "thoughts_token_count", 0) or 0)
    inputs = by_modality(getattr(usage, "prompt_tokens_details", None))
    outputs = by_modality(getattr(usage, "candidates_tokens_details", None))
    image_in = inputs.get("IMAGE", 0)
    image_out = outputs.get("IMAGE", output if not outputs else 0)
    return {"text_input": prompt - image_in, "image_input": image_in,
            "image_output": image_out, "text_output": output - image_out + thoughts}


def _name(value: Any) -> str:
    """An SDK enum (or the plain string the API sent) as its name."""
    if value is None:
        return ""
    return str(getattr(value, "value", value))
