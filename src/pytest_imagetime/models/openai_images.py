"""Model ``openai-images``: OpenAI's images API (gpt-image-1 and later; gpt-image-2 by default),
or any server that speaks it, through a base URL.

``openai-images[:MODEL][:key=value,...]``, e.g. ``openai-images:gpt-image-1.5`` or
``openai-images:gpt-image-1:quality=high,api_size=1024x1024``. Single pass: one successful
request per case and its first image kept. Only transport failures (429 with Retry-After,
5xx, timeouts, resets) are retried, by ``openai_client.Endpoint``, which also checks the
endpoint before the first request and stops calling one that keeps failing the same way; a
refusal or a bad image is an error with its reason, never a reason to ask again. In the
scaffold setting the scaffold canvas goes to the edits endpoint. The endpoint takes no seed:
the case's seed is recorded, and sent only when ``send_seed=true`` asks (for compatible
servers that honour one).
"""

from __future__ import annotations

import base64
import binascii
import functools
import io
import json
import time
import urllib.request
from collections.abc import Mapping
from importlib import resources
from typing import Any

from PIL import Image

from ..backends.openai_client import (
    NO_CALLS,
    Endpoint,
    base_url_of,
    load_sdk,
    open_endpoint,
    safe_url,
)
from .base import Generated, GenerationRequest, ImageModel, ModelError, ModelOptions
from .keys import KEY_ENV_HINT, key_env_named, read_key
from .overrides import (
    Converter,
    boolean,
    choice,
    parse_overrides,
    split_argument,
    whole_number,
)

DEFAULT_MODEL = "gpt-image-2"  # GPT Image 2, the model the ImageTime paper evaluates
SEED_NOTE = "the images endpoint takes no seed: the case seed is recorded, not sent"

Price = Mapping[str, float]  # USD per 1M tokens by kind: text_input, image_input, ...
TOKEN_KINDS = ("text_input", "image_input", "image_output", "text_output")


def api_size(raw: str) -> str:
    """``WIDTHxHEIGHT`` or ``auto``, as the endpoint's ``size`` field takes it."""
    if raw == "auto":
        return raw
    width, sep, height = raw.lower().partition("x")
    if not (sep and width.isdigit() and height.isdigit() and int(width) and int(height)):
        raise ValueError("give WIDTHxHEIGHT (e.g. 1024x1024) or auto")
    return f"{int(width)}x{int(height)}"


def percent(raw: str) -> int:
    value = whole_number(raw, "give an integer from 0 to 100")
    if not 0 <= value <= 100:
        raise ValueError("give an integer from 0 to 100")
    return value


OVERRIDES: Mapping[str, Converter] = {
    "quality": choice("low", "medium", "high", "auto", "xhigh", "max", "standard", "hd"),
    "api_size": api_size,
    "background": choice("auto", "opaque", "transparent"),
    "moderation": choice("auto", "low"),
    "output_format": choice("png", "jpeg", "webp"),
    "output_compression": percent,
    "input_fidelity": choice("low", "high"),  # edits only
    "style": choice("vivid", "natural"),  # dall-e-3
    "response_format": choice("b64_json", "url"),
    "send_seed": boolean,
}
# Overrides that are request fields of the same name, per endpoint (the edits endpoint takes
# no moderation or style; generations no input_fidelity).
GENERATION_FIELDS = ("quality", "background", "moderation", "output_format",
                     "output_compression", "style", "response_format")
EDIT_FIELDS = ("quality", "background", "output_format", "output_compression",
               "input_fidelity", "response_format")


# ------------------------------------------------------------------ prices and costs


@functools.cache
def shipped_prices() -> dict[str, Price]:
    text = resources.files("pytest_imagetime").joinpath("data/image_prices.json").read_text(
        encoding="utf-8")
    return {str(model): {str(kind): float(usd) for kind, usd in entry.items()}
            for model, entry in json.loads(text)["prices"].items()}


def price_for(model: str) -> Price | None:
    """The shipped price of ``model``; the longest model-name prefix wins, so dated snapshots
    (``gpt-image-1-2025-04-23``) find their family."""
    table = shipped_prices()
    if model in table:
        return table[model]
    prefixes = [name for name in table if model.startswith(name + "-")]
    return table[max(prefixes, key=len)] if prefixes else None


def _count(details: Any, name: str) -> int:
    return int(getattr(details, name, 0) or 0)


def token_counts(usage: Any) -> dict[str, int]:
    """The reported usage by priced kind. Without a breakdown, input counts as text and
    output as image (what a prompt-only request is)."""
    inputs = getattr(usage, "input_tokens_details", None)
    outputs = getattr(usage, "output_tokens_details", None)
    input_total, output_total = _count(usage, "input_tokens"), _count(usage, "output_tokens")
    return {
        "text_input": _count(inputs, "text_tokens") if inputs else input_total,
        "image_input": _count(inputs, "image_tokens") if inputs else 0,
        "image_output": _count(outputs, "image_tokens") if outputs else output_total,
        "text_output": _count(outputs, "text_tokens") if outputs else 0,
    }


def cost_usd(price: Price, counts: Mapping[str, int]) -> float:
    return sum(counts[kind] * price.get(kind, 0.0) for kind in TOKEN_KINDS) / 1_000_000


def _plain(value: Any) -> Any:
    """A response object as JSON-ready data (records are JSON)."""
    dump = getattr(value, "model_dump", None)
    return dump() if callable(dump) else value


def _short(text: str, limit: int = 240) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


def png_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def decode_image(data: bytes) -> Image.Image:
    """The returned file as an RGB image; anything Pillow cannot read is a ModelError."""
    try:
        with Image.open(io.BytesIO(data)) as opened:
            opened.load()
            return opened.convert("RGB")
    except (OSError, ValueError, Image.DecompressionBombError) as exc:
        raise ModelError(f"the endpoint returned an image that cannot be decoded: {exc}"
                         ) from None


def decode_b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ModelError(f"the endpoint returned invalid base64 image data: {exc}") from None


# ------------------------------------------------------------------ the backend


class OpenAIImagesModel(ImageModel):
    """One square motion sheet per request from an OpenAI-compatible images endpoint."""

    accepts_reference = True  # the scaffold setting goes to the edits endpoint

    def __init__(self, argument: str | None = None, *, name: str = "openai-images",
                 options: ModelOptions | None = None) -> None:
        self.options = options or ModelOptions()
        target, overrides = split_argument(argument)
        self.model = target or DEFAULT_MODEL
        self.overrides: dict[str, Any] = parse_overrides(overrides, OVERRIDES, name)
        self._spec = f"{name}:{argument}" if argument else name
        self.price = price_for(self.model)
        self.api_key: str | None = None
        self._endpoint: Endpoint | None = None
        if not self.options.calls:  # it only names and describes its sheets
            return
        who = "the openai-images model"
        # The package, then the key: a missing key is a MissingKey, which the start-up words
        # for a run of one hosted backend or of several.
        load_sdk(who)
        read_key(self.options.key_env, who, named=key_env_named(self.options))
        # One client for every generating thread: it is thread-safe and pools connections.
        self._endpoint = open_endpoint(
            backend=who, who="the images endpoint", model=self.model,
            base_url=self.options.base_url, key_env=self.options.key_env,
            key_hint=KEY_ENV_HINT,
            timeout_s=self.options.timeout_s, retries=self.options.retries,
            headers=self.options.headers, error=ModelError,
            base_url_option="--imagetime-model-base-url",
            key_option="--imagetime-model-key-env", model_option=f"the model in {name}:MODEL",
            timeout_option="--imagetime-model-timeout",
            params_option=f"the overrides in {name}:key=value",
            refusal="the endpoint refused the prompt (content policy)")
        self.api_key = self._endpoint.config.api_key

    @property
    def name(self) -> str:
        return self._spec

    @property
    def base_url(self) -> str | None:
        """The endpoint as shown and stored: credentials in it are masked."""
        return safe_url(base_url_of(self.options.base_url))

    @property
    def endpoint(self) -> Endpoint:
        if self._endpoint is None:
            raise ModelError(f"the openai-images model was {NO_CALLS}")
        return self._endpoint

    @property
    def concurrency(self) -> int:
        """Requests the run may have in flight at once; generate is thread-safe."""
        return self.options.concurrency

    def config(self) -> Mapping[str, Any]:
        return {"backend": "openai-images", "model": self.model, "base_url": self.base_url,
                "overrides": dict(sorted(self.overrides.items()))}

    # ------------------------------------------------------------ one sheet

    @staticmethod
    def is_edit(request: GenerationRequest) -> bool:
        """The scaffold canvas is edited; a reference image (one t1 picture) is generated."""
        return request.scaffold is not None and request.kind != "reference"

    def api_size(self, request: GenerationRequest) -> str:
        return str(self.overrides.get("api_size") or f"{request.size}x{request.size}")

    def request_fields(self, request: GenerationRequest) -> dict[str, Any]:
        """The call's arguments. Optional fields travel in ``extra_body``: every SDK version
        sends them, whether or not its signature knows them yet."""
        names = EDIT_FIELDS if self.is_edit(request) else GENERATION_FIELDS
        extra = {k: self.overrides[k] for k in names if k in self.overrides}
        if self.overrides.get("send_seed"):
            extra["seed"] = request.seed
        fields: dict[str, Any] = {"model": self.model, "prompt": request.text, "n": 1,
                                  "size": self.api_size(request)}
        if extra:
            fields["extra_body"] = extra
        if self.is_edit(request) and request.scaffold is not None:
            fields["image"] = ("scaffold.png", png_bytes(request.scaffold), "image/png")
        return fields

    def generate(self, *, request: GenerationRequest) -> Generated:
        started = time.perf_counter()
        response, request_id = self._call(request)
        raw, delivery, count = self._first_image(response)
        image = decode_image(raw)
        seconds = time.perf_counter() - started
        details = self._details(request, response, request_id, image)
        details.update(delivery=delivery, images_returned=count, seconds=round(seconds, 3))
        return Generated(image, details, data=raw)

    def _call(self, request: GenerationRequest) -> tuple[Any, str | None]:
        """The parsed response and its request id; every failure a ModelError with its reason.
        Transport failures were already retried by the endpoint: they end here."""
        fields = self.request_fields(request)
        edit = self.is_edit(request)

        def send(client: Any) -> tuple[Any, str | None]:
            images = client.images.with_raw_response
            raw = (images.edit if edit else images.generate)(**fields)
            return raw.parse(), raw.headers.get("x-request-id")

        return self.endpoint.call(send)

    def _first_image(self, response: Any) -> tuple[bytes, str, int]:
        """The first image's file (single pass: any others are ignored), how it came, how many
        did."""
        data = getattr(response, "data", None) or []
        if not data:
            raise ModelError("the images endpoint answered without image data")
        first = data[0]
        b64 = getattr(first, "b64_json", None)
        url = getattr(first, "url", None)
        if b64:
            return decode_b64(b64), "b64_json", len(data)
        if url:
            return self._fetch(str(url)), "url", len(data)
        raise ModelError("the images endpoint's answer has neither b64_json nor url")

    def _fetch(self, url: str) -> bytes:
        """An image the endpoint left at a URL (``response_format=url``); fetched once."""
        try:
            with urllib.request.urlopen(url, timeout=self.options.timeout_s) as answer:
                data: bytes = answer.read()
                return data
        except (OSError, ValueError) as exc:
            raise ModelError(self._redact(f"cannot fetch the image at {_short(url, 120)}: "
                                          f"{exc}")) from None

    def _details(self, request: GenerationRequest, response: Any, request_id: str | None,
                 image: Image.Image) -> dict[str, Any]:
        first = (getattr(response, "data", None) or [None])[0]
        usage = getattr(response, "usage", None)
        reported = {k: getattr(response, k, None)
                    for k in ("size", "quality", "background", "output_format")}
        details: dict[str, Any] = {
            "model": self.model,
            "endpoint": "edits" if self.is_edit(request) else "generations",
            "api_size": self.api_size(request), **self.overrides,
            "requested_size": request.size, "returned_size": [image.width, image.height],
            "seed": request.seed, "seed_sent": bool(self.overrides.get("send_seed")),
            "request_id": request_id, "response_id": getattr(response, "id", None),
            "created": getattr(response, "created", None),
            "revised_prompt": getattr(first, "revised_prompt", None),
            "reported": {k: v for k, v in reported.items() if v is not None},
            "usage": _plain(usage),
        }
        if not details["seed_sent"]:
            details["seed_note"] = SEED_NOTE
        details.update(self._cost(usage))
        return details

    def _cost(self, usage: Any) -> dict[str, Any]:
        if usage is None:
            return {"cost_usd": None, "cost_note": "the endpoint reported no token usage"}
        if self.price is None:
            return {"cost_usd": None,
                    "cost_note": f"no price for {self.model!r} in image_prices.json"}
        return {"cost_usd": round(cost_usd(self.price, token_counts(usage)), 6),
                "tokens": token_counts(usage)}

    def _redact(self, text: str) -> str:
        """The key never leaves this object: not in errors, logs or reports."""
        return text if self._endpoint is None else self._endpoint.redact(text)
