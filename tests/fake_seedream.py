"""A local server that speaks BytePlus ModelArk's image generation API as documented:
``POST /api/v3/images/generations`` with a bearer key, a square PNG drawn from the prompt
(base64 or a URL), ``usage.generated_images``, and ModelArk's error bodies
(``{"error": {"code", "message", "param", "type"}}``)."""

from __future__ import annotations

import base64
import time
from typing import Any

from tests.fake_hosted import TRANSPORT_FAULTS, HostedHandler
from tests.fake_openai import drawn_png

ROUTE = "/api/v3/images/generations"
FAULTS = (*TRANSPORT_FAULTS, "input_sensitive", "output_sensitive", "item_error", "no_data",
          "quota", "bad_b64")
SENSITIVE_MESSAGE = ("The request failed because the input text may contain sensitive "
                     "information. Request id: 0217")


def error(code: str, message: str, kind: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "param": "", "type": kind}}


class SeedreamHandler(HostedHandler):
    def do_GET(self) -> None:
        self.note_get()
        if not self.serve_file():
            self.send_json(404, error("NotFound", f"no route {self.path}", "NotFound"))

    def do_POST(self) -> None:
        body = self.read_json()
        if self.path != ROUTE:
            self.send_json(404, error("NotFound", f"no route {self.path}", "NotFound"))
            return
        key = self.headers.get("authorization", "")
        if self.state.required_key is not None and key != f"Bearer {self.state.required_key}":
            self.send_json(401, error("AuthenticationError", "The API key or AK/SK in the "
                                      "request is missing or invalid. Request id: 0217",
                                      "Unauthorized"))
            return
        model = str(body.get("model", ""))
        if not self.state.serves(model):
            self.send_json(404, error("InvalidEndpointOrModel.NotFound", f"The model or "
                                      f"endpoint {model} does not exist or you do not have "
                                      f"access to it. Request id: 0217", "NotFound"))
            return
        self.enter()
        try:
            self.answer(body)
        finally:
            self.leave()

    def answer(self, body: dict[str, Any]) -> None:
        side = int(str(body.get("size", "2048x2048")).partition("x")[0] or 2048)
        png = drawn_png(str(body.get("prompt", "")), (side, side))
        item: dict[str, Any] = {"size": f"{side}x{side}"}
        if body.get("response_format") == "url":
            item["url"] = self.keep_file(png)
        else:
            item["b64_json"] = base64.b64encode(png).decode()
        answer = {"model": body.get("model"), "created": int(time.time()), "data": [item],
                  "usage": {"generated_images": 1, "output_tokens": 16384,
                            "total_tokens": 16384}}
        fault = self.state.next_fault()
        if fault is None:
            self.send_json(200, answer, {"x-request-id": "0217-req"})
        elif not self.transport_fault(fault, error(
                "RateLimitExceeded.EndpointRPMExceeded" if fault == "429" else
                "InternalServiceError", f"server error {fault}",
                "TooManyRequests" if fault == "429" else "InternalServerError"), answer):
            self.model_fault(fault, answer)

    def model_fault(self, fault: str, answer: dict[str, Any]) -> None:
        if fault == "input_sensitive":
            self.send_json(400, error("InputTextSensitiveContentDetected", SENSITIVE_MESSAGE,
                                      "BadRequest"))
        elif fault == "output_sensitive":
            self.send_json(400, error("OutputImageSensitiveContentDetected", "The request "
                                      "failed because the output image may contain sensitive "
                                      "information.", "BadRequest"))
        elif fault == "item_error":
            answer["data"] = [{"error": {"code": "OutputImageSensitiveContentDetected",
                                         "message": "The output image may be sensitive."}}]
            self.send_json(200, answer)
        elif fault == "no_data":
            answer["data"] = []
            self.send_json(200, answer)
        elif fault == "quota":
            self.send_json(429, error("QuotaExceeded", "Your account has reached its quota.",
                                      "TooManyRequests"))
        elif fault == "bad_b64":
            answer["data"] = [{"b64_json": "@@not base64"}]
            self.send_json(200, answer)
        else:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")

