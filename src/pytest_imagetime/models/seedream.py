"""Model ``seedream``: ByteDance's Seedream through BytePlus ModelArk's image generation API
(``POST {base}/images/generations``, a bearer key from ``ARK_API_KEY``); Seedream 5.0 Lite,
the model the ImageTime paper evaluates, by default.

``seedream[:MODEL][:key=value,...]``. One request per sheet asks for one square image
(``sequential_image_generation=disabled``, no watermark) and the first image returned is kept.
ModelArk refuses a prompt or an image it finds sensitive with a 400 whose code says so: an
item error with that reason, never asked again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from PIL import Image

from ..backends.hosted_calls import (
    fetch_bytes,
    http_failure,
    request_json,
)
from ..backends.openai_client import Failure
from .base import Generated, GenerationRequest, ModelError, ModelOptions
from .hosted import HostedModel, per_image_cost
from .openai_images import decode_b64, decode_image
from .overrides import Converter, boolean, choice

DEFAULT_MODEL = "seedream-5-0-260128"  # Seedream 5.0 Lite on ModelArk
DEFAULT_BASE_URL = "https://ark.ap-southeast.bytepluses.com/api/v3"
KEY_ENV = "ARK_API_KEY"
# Seedream 5.0 Lite draws 2K or 3K images: 2048x2048 is its 2K square.
DEFAULT_API_SIZE = "2048x2048"
SEED_NOTE = "Seedream 4.0 and later take no seed: the case seed is recorded, not sent"
# Codes with which ModelArk refuses one request's prompt or image
# (InputTextSensitiveContentDetected, OutputImageSensitiveContentDetected, ...).
REFUSAL_MARK = "SensitiveContentDetected"
# 429 codes that mean a spent quota or an unpaid account, not "slow down".
SPENT_CODES = ("QuotaExceeded", "AccountOverdue")


def api_size(raw: str) -> str:
    """``WIDTHxHEIGHT`` or a resolution ModelArk names (``2K``, ``3K``)."""
    if raw.upper() in ("1K", "2K", "3K", "4K"):
        return raw.upper()
    width, sep, height = raw.lower().partition("x")
    if not (sep and width.isdigit() and height.isdigit() and int(width) and int(height)):
        raise ValueError("give WIDTHxHEIGHT (e.g. 2048x2048), 2K or 3K")
    return f"{int(width)}x{int(height)}"


OVERRIDES: Mapping[str, Converter] = {
    "api_size": api_size,
    "output_format": choice("png", "jpeg"),
    "response_format": choice("b64_json", "url"),
    "send_seed": boolean,
}


def classify(exc: BaseException) -> Failure | None:
    failure = http_failure(exc)
    if failure is not None and failure.status == 429 \
            and any(code in failure.code for code in SPENT_CODES):
        return Failure("auth", 429, failure.message, False, code=failure.code)
    return failure


def is_refusal(failure: Failure) -> bool:
    return failure.status == 400 and REFUSAL_MARK in failure.code


class SeedreamModel(HostedModel):
    """One square motion sheet per request from BytePlus ModelArk's Seedream."""

    backend = "seedream"
    default_base_url = DEFAULT_BASE_URL

    def __init__(self, argument: str | None = None, *, name: str = "seedream",
                 options: ModelOptions | None = None) -> None:
        super().__init__(argument, name, options, default_model=DEFAULT_MODEL,
                         converters=OVERRIDES)
        if self.options.calls:  # else it only names and describes its sheets
            self.call_with_key_header(name, KEY_ENV, "the Seedream endpoint",
                                      lambda key: {"authorization": f"Bearer {key}"},
                                      classify=classify, refusal=is_refusal)

    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "prompt": request.text,
            "size": self.overrides.get("api_size", DEFAULT_API_SIZE),
            "response_format": self.overrides.get("response_format", "b64_json"),
            "output_format": self.overrides.get("output_format", "png"),
            "sequential_image_generation": "disabled", "watermark": False, "stream": False,
        }
        if self.overrides.get("send_seed"):
            body["seed"] = request.seed
        return body

    def generate(self, *, request: GenerationRequest) -> Generated:
        started = time.perf_counter()
        url = (self.options.base_url or DEFAULT_BASE_URL).rstrip("/") + "/images/generations"
        body = self.request_body(request)
        answer, headers = self.calls.call(lambda: request_json(
            "POST", url, headers=self._headers, timeout_s=self.options.timeout_s, body=body))
        raw, delivery, count = self._first_image(answer)
        image = decode_image(raw)
        details = self._details(request, body, answer, headers, image)
        details.update(delivery=delivery, images_returned=count,
                       seconds=round(time.perf_counter() - started, 3))
        return Generated(image, details, data=raw)

    def _first_image(self, answer: Any) -> tuple[bytes, str, int]:
        data = answer.get("data") if isinstance(answer, Mapping) else None
        if not data:
            raise ModelError("the Seedream endpoint answered without image data")
        first = data[0] if isinstance(data[0], Mapping) else {}
        error = first.get("error")
        if isinstance(error, Mapping):  # one image of the answer failed, with its reason
            code = str(error.get("code") or "")
            what = ("refused the image (content policy" + (f", {code})" if code else ")")
                    if REFUSAL_MARK in code else f"failed to draw the image ({code or 'error'})")
            raise ModelError(self.calls.redact(
                f"the Seedream endpoint {what}: {error.get('message', '')}"))
        if first.get("b64_json"):
            return decode_b64(str(first["b64_json"])), "b64_json", len(data)
        if first.get("url"):
            url = str(first["url"])
            try:
                return fetch_bytes(url, self.options.timeout_s), "url", len(data)
            except ConnectionError as exc:
                raise ModelError(self.calls.redact(
                    f"cannot fetch the Seedream image at {url[:120]}: {exc}")) from None
        raise ModelError("the Seedream endpoint's answer has neither b64_json nor url")

    def _details(self, request: GenerationRequest, body: Mapping[str, Any], answer: Any,
                 headers: Mapping[str, str], image: Image.Image) -> dict[str, Any]:
        usage = answer.get("usage")
        details: dict[str, Any] = {
            "model": self.model, "answered_model": answer.get("model"),
            "api_size": body["size"], **self.overrides,
            "requested_size": request.size, "returned_size": [image.width, image.height],
            "reported_size": (answer.get("data") or [{}])[0].get("size"),
            "seed": request.seed, "seed_sent": "seed" in body,
            "request_id": headers.get("x-request-id") or headers.get("x-tt-logid"),
            "created": answer.get("created"), "usage": usage,
        }
        if not details["seed_sent"]:
            details["seed_note"] = SEED_NOTE
        details.update(per_image_cost(self.model, image.width * image.height / 1e6))
        return details
