"""A local server that speaks the Gemini API's ``generateContent`` and ``models.get`` as
documented, for the real ``google-genai`` client: the Gemini API under ``/v1/models/`` (or
``/v1beta``) with an ``x-goog-api-key`` header; Vertex AI under ``/v1beta1/projects/P/
locations/L/publishers/google/models/`` with a bearer token, which application default
credentials get from ``/token``. An image answer is an ``inlineData`` part with a square PNG
of the asked ``imageSize``, and ``usageMetadata`` by modality. Its errors are Google's
``{"error": {"code", "message", "status", "details"}}``: a wrong key is a 400 with
``API_KEY_INVALID``, a 429 carries a ``RetryInfo``; a blocked prompt is a 200 with
``promptFeedback.blockReason``, a withheld image a candidate with ``finishReason
IMAGE_SAFETY``."""

from __future__ import annotations

import base64
import re
from typing import Any

from tests.fake_hosted import TRANSPORT_FAULTS, HostedHandler
from tests.fake_openai import drawn_png

FAULTS = (*TRANSPORT_FAULTS, "prompt_blocked", "image_safety", "text_only")
SIDES = {"512": 512, "1K": 1024, "2K": 2048, "4K": 4096}
IMAGE_TOKENS = 1120
THOUGHT_TOKENS = 40
TOKEN = "ya29.vertex-token"  # what /token hands out for application default credentials
BLOCK_MESSAGE = "The prompt was blocked for prohibited content."


def google_error(code: int, status: str, message: str, *details: dict[str, Any]
                 ) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status,
                      "details": list(details)}}


KEY_INVALID = google_error(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid "
                           "API key.", {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                        "reason": "API_KEY_INVALID",
                                        "domain": "googleapis.com"})


def camel(value: Any) -> Any:
    """A JSON body with lowerCamelCase names: the API takes proto field names in either case
    (the SDK sends some nested ones in snake_case)."""
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): camel(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [camel(v) for v in value]
    return value


def _usage(prompt: str, image: bool) -> dict[str, Any]:
    text = max(1, len(prompt) // 4)
    output = IMAGE_TOKENS if image else 12
    return {"promptTokenCount": text, "candidatesTokenCount": output,
            "thoughtsTokenCount": THOUGHT_TOKENS,
            "totalTokenCount": text + output + THOUGHT_TOKENS,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": text}],
            "candidatesTokensDetails": [{"modality": "IMAGE" if image else "TEXT",
                                         "tokenCount": output}]}


def model_not_found(model: str) -> dict[str, Any]:
    """The Gemini API's answer for a model it does not serve (retired, or misspelt)."""
    return google_error(404, "NOT_FOUND", f"models/{model} is not found for API version "
                        "v1beta, or is not supported for generateContent. Call ListModels to "
                        "see the list of available models and their supported methods.")


class GeminiHandler(HostedHandler):
    def _key_ok(self) -> bool:
        required = self.state.required_key
        if required is None:
            return True
        if "/projects/" in self.path or "/publishers/" in self.path:  # Vertex AI
            if self.headers.get("authorization") != f"Bearer {TOKEN}":
                self.send_json(401, google_error(401, "UNAUTHENTICATED", "Request had invalid "
                                                 "authentication credentials."))
                return False
            return True
        if self.headers.get("x-goog-api-key") != required:
            self.send_json(400, KEY_INVALID)
            return False
        return True

    def do_GET(self) -> None:
        self.note_get()
        if not self._key_ok():
            return
        name = self.path.partition("?")[0].rpartition("/models/")[2]
        if not name:
            self.send_json(404, google_error(404, "NOT_FOUND", "not found"))
            return
        if not self.state.serves(name):
            self.send_json(404, model_not_found(name))
            return
        self.send_json(200, {"name": f"models/{name}", "displayName": name,
                             "supportedGenerationMethods": ["generateContent"]})

    def do_POST(self) -> None:
        if self.path == "/token":  # an OAuth refresh: a form body, not JSON
            self.rfile.read(int(self.headers.get("content-length", "0")))
            self.send_json(200, {"access_token": TOKEN, "expires_in": 3600,
                                 "token_type": "Bearer"})
            return
        body = self.read_json()
        if not self.path.endswith(":generateContent"):
            self.send_json(404, google_error(404, "NOT_FOUND", f"no route {self.path}"))
            return
        if not self._key_ok():
            return
        model = self.path.rpartition("/models/")[2].partition(":")[0]
        if not self.state.serves(model):
            self.send_json(404, model_not_found(model))
            return
        self.enter()
        try:
            self.answer(body)
        finally:
            self.leave()

    def answer(self, body: dict[str, Any]) -> None:
        prompt = " ".join(part.get("text", "") for content in body.get("contents", [])
                          for part in content.get("parts", []))
        config = camel(body.get("generationConfig", {}))
        side = SIDES[config.get("imageConfig", {}).get("imageSize", "1K")]
        data = base64.b64encode(drawn_png(prompt, (side, side))).decode()
        answer: dict[str, Any] = {
            "candidates": [{"content": {"role": "model", "parts": [
                {"inlineData": {"mimeType": "image/png", "data": data}}]},
                "finishReason": "STOP", "index": 0}],
            "usageMetadata": _usage(prompt, True),
            "modelVersion": self.path.rpartition("/")[2].partition(":")[0],
            "responseId": "resp-1"}
        fault = self.state.next_fault()
        if fault is None:
            self.send_json(200, answer)
            return
        retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0s"}
        errors = {"429": google_error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted "
                                      "(e.g. check quota).", retry),
                  "500": google_error(500, "INTERNAL", "An internal error has occurred."),
                  "503": google_error(503, "UNAVAILABLE", "The model is overloaded. Please "
                                      "try again later.")}
        if self.transport_fault(fault, errors.get(fault, {}), answer):
            return
        if fault == "prompt_blocked":
            self.send_json(200, {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT",
                                                    "blockReasonMessage": BLOCK_MESSAGE},
                                 "usageMetadata": _usage(prompt, False)})
        elif fault == "image_safety":
            self.send_json(200, {"candidates": [{
                "content": {"role": "model"}, "finishReason": "IMAGE_SAFETY",
                "finishMessage": "Unable to show the generated image.", "index": 0}],
                "usageMetadata": _usage(prompt, False)})
        elif fault == "text_only":
            self.send_json(200, {"candidates": [{
                "content": {"role": "model", "parts": [{"text": "Here is your image."}]},
                "finishReason": "STOP", "index": 0}], "usageMetadata": _usage(prompt, False)})
        else:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
