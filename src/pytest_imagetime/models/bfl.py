"""Model ``bfl``: Black Forest Labs' API (``POST {host}/v1/{model}`` with an ``x-key`` header
from ``BFL_API_KEY``, then ``GET polling_url`` until the task is ``Ready``); FLUX.2 [pro], the
model the ImageTime paper evaluates, by default.

``bfl[:MODEL][:key=value,...]``: the model names the endpoint (``flux-2-pro``, ``flux-2-max``,
...). One task per sheet, a square of ``--imagetime-size`` pixels with the case's seed and no
prompt upsampling; its image (a signed URL that expires in minutes) is fetched as soon as the
task is ready. A moderated request or output is an item error with BFL's reason.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from PIL import Image

from ..backends.hosted_calls import fetch_bytes, request_json
from .base import Generated, GenerationRequest, ModelError, ModelOptions
from .hosted import HostedModel, per_image_cost
from .openai_images import decode_image
from .overrides import Converter, boolean, whole_number

DEFAULT_MODEL = "flux-2-pro"  # the pinned FLUX.2 [pro] snapshot, for reproducible runs
DEFAULT_BASE_URL = "https://api.bfl.ai"  # global; api.eu.bfl.ai and api.us.bfl.ai are regional
KEY_ENV = "BFL_API_KEY"
POLL_INTERVAL_S = 0.5
USD_PER_CREDIT = 0.01  # BFL bills in credits of one US cent
# Task statuses that end a task without an image, and how an error words them.
MODERATED = {"Request Moderated": "BFL moderated the request (the prompt)",
             "Content Moderated": "BFL moderated the output image"}


def side(raw: str) -> int:
    accepted = "give a side in pixels, a multiple of 16 from 64"
    value = whole_number(raw, accepted)
    if value < 64 or value % 16:
        raise ValueError(accepted)
    return value


def tolerance(raw: str) -> int:
    accepted = "give an integer from 0 (strictest) to 6"
    value = whole_number(raw, accepted)
    if not 0 <= value <= 6:
        raise ValueError(accepted)
    return value


OVERRIDES: Mapping[str, Converter] = {
    "api_size": side,
    "safety_tolerance": tolerance,
    "prompt_upsampling": boolean,
}


class BflModel(HostedModel):
    """One square motion sheet per task from Black Forest Labs' API."""

    backend = "bfl"
    default_base_url = DEFAULT_BASE_URL

    def __init__(self, argument: str | None = None, *, name: str = "bfl",
                 options: ModelOptions | None = None) -> None:
        super().__init__(argument, name, options, default_model=DEFAULT_MODEL,
                         converters=OVERRIDES)
        if self.options.calls:  # else it only names and describes its sheets
            self.call_with_key_header(name, KEY_ENV, "the BFL API",
                                      lambda key: {"x-key": key}, check=self._check_key)

    def _url(self, path: str) -> str:
        return (self.options.base_url or DEFAULT_BASE_URL).rstrip("/") + path

    def _check_key(self) -> None:
        """GET /v1/credits, free: the host answers and the key is accepted."""
        request_json("GET", self._url("/v1/credits"), headers=self._headers,
                     timeout_s=min(self.options.timeout_s, 10.0))

    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        size = int(self.overrides.get("api_size", request.size))
        return {"prompt": request.text, "width": size, "height": size, "seed": request.seed,
                "safety_tolerance": self.overrides.get("safety_tolerance", 2),
                "output_format": "png",
                "prompt_upsampling": self.overrides.get("prompt_upsampling", False)}

    def generate(self, *, request: GenerationRequest) -> Generated:
        started = time.perf_counter()
        body = self.request_body(request)
        task, _ = self.calls.call(lambda: request_json(
            "POST", self._url(f"/v1/{self.model}"), headers=self._headers,
            timeout_s=self.options.timeout_s, body=body))
        if not isinstance(task, Mapping) or not task.get("polling_url"):
            raise ModelError(f"the BFL API answered without a polling_url: {str(task)[:200]}")
        result, polls = self._wait(task, started)
        sample = result.get("sample") if isinstance(result, Mapping) else None
        if not sample:
            raise ModelError("the BFL API's ready task has no result.sample")
        try:
            raw = fetch_bytes(str(sample), self.options.timeout_s)
        except ConnectionError as exc:
            raise ModelError(f"cannot fetch the BFL image at once (its signed URL expires in "
                             f"minutes): {exc}") from None
        image = decode_image(raw)
        details = self._details(request, body, task, result, image)
        details.update(polls=polls, seconds=round(time.perf_counter() - started, 3))
        return Generated(image, details, data=raw)

    def _wait(self, task: Mapping[str, Any], started: float) -> tuple[Any, int]:
        """Poll the task until it is ready; its ``result`` and how many polls it took. A
        moderated, failed or lost task is an error with its reason."""
        url, polls = str(task["polling_url"]), 0
        while True:
            answer, _ = self.calls.call(lambda: request_json(
                "GET", url, headers=self._headers, timeout_s=self.options.timeout_s))
            polls += 1
            status = str(answer.get("status", "")) if isinstance(answer, Mapping) else ""
            if status == "Ready":
                return answer.get("result"), polls
            if status in MODERATED:
                raise ModelError(f"{MODERATED[status]}: {_reason(answer)}")
            if status not in ("Pending", "Processing", ""):
                raise ModelError(f"the BFL task {task.get('id')} ended with status "
                                 f"{status!r}: {_reason(answer)}")
            if not status:
                raise ModelError(f"the BFL API's poll answer has no status: {str(answer)[:200]}")
            if time.perf_counter() - started > self.options.timeout_s:
                raise ModelError(f"the BFL task {task.get('id')} was not ready within "
                                 f"{self.options.timeout_s:g} s (--imagetime-model-timeout)")
            time.sleep(POLL_INTERVAL_S)

    def _details(self, request: GenerationRequest, body: Mapping[str, Any],
                 task: Mapping[str, Any], result: Mapping[str, Any],
                 image: Image.Image) -> dict[str, Any]:
        details: dict[str, Any] = {
            "model": self.model, "api_size": body["width"], **self.overrides,
            "safety_tolerance": body["safety_tolerance"],
            "prompt_upsampling": body["prompt_upsampling"],
            "requested_size": request.size, "returned_size": [image.width, image.height],
            "seed": request.seed, "seed_sent": True, "task_id": task.get("id"),
            "reported_seed": result.get("seed"), "credits": task.get("cost"),
            "input_mp": task.get("input_mp"), "output_mp": task.get("output_mp"),
        }
        if isinstance(task.get("cost"), (int, float)):
            details["cost_usd"] = round(float(task["cost"]) * USD_PER_CREDIT, 6)
        else:
            details.update(per_image_cost(self.model, image.width * image.height / 1e6))
        return details


def _reason(answer: Any) -> str:
    """What a finished task says about why it has no image."""
    if not isinstance(answer, Mapping):
        return str(answer)[:200]
    details = answer.get("details")
    if isinstance(details, Mapping):
        reasons = details.get("moderation_reasons") or details.get("reasons")
        if reasons:
            return ", ".join(str(r) for r in reasons)
        return ", ".join(f"{k}: {v}" for k, v in details.items()) or "no details"
    return str(details or answer.get("error") or "no details given")
