"""A real HTTP server on 127.0.0.1 that speaks the Chat Completions and Images protocols,
for tests.

It reads the case specification out of the judge's request and answers like a careful
judge would (every applicable dimension scored, every predicate and forbidden state
answered), so the real ``openai`` client and the real judge code run end to end. The images
endpoints (generations: JSON; edits: multipart) answer with a PNG drawn from the prompt, a
square of the requested size, and token usage like the real API. Faults can be injected: a
queue of named faults, and/or a seeded random rate.

It can also behave as a whole endpoint does (``flavour``): OpenAI (a wrong key is a 401 that
shows the key partly masked; gpt-5 models reject a temperature other than 1, ``max_tokens``
and unknown ``reasoning_effort`` values with OpenAI's 400 shapes), Azure OpenAI's v1 endpoint
(under ``/openai/v1``, the key in ``api-key`` or as a bearer token, deployments as model
names), vLLM and Ollama (their own error bodies). ``hang_s`` makes every request wait, and
``GET /models`` lists ``models``. ``closed_port_url`` is an endpoint that refuses connections.
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import hashlib
import io
import json
import random
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from PIL import Image, ImageDraw

FAULTS = ("429", "500", "503", "timeout", "reset", "malformed", "schema", "refusal", "empty",
          "truncated")
# Faults the images endpoints serve: the transport ones above, then refusals and bad payloads.
IMAGE_FAULTS = ("429", "500", "503", "timeout", "reset", "malformed", "content_policy",
                "no_data", "bad_b64", "not_image")
# Faults served only when queued by name (never drawn at random): a 400 about one request, a
# 429 that says the quota is used up, a choice without a message, a 429 that asks for a wait.
NAMED_FAULTS = ("bad_request", "quota", "no_message", "429_wait")
CHAT_ROUTE = "/chat/completions"
GENERATIONS_ROUTE = "/images/generations"
EDITS_ROUTE = "/images/edits"
ROUTES = (CHAT_ROUTE, GENERATIONS_ROUTE, EDITS_ROUTE)
# Usage the images endpoints report: 1056 output tokens is a medium 1024x1024 image.
OUTPUT_IMAGE_TOKENS = 1056
EDIT_INPUT_IMAGE_TOKENS = 388
REFUSAL_MESSAGE = ("Your request was rejected by the safety system. "
                   "safety_violations=[violence].")
LISTED_MODELS = ("gpt-5.5", "gpt-5.4-mini", "gpt-image-2", "fake-judge")
FLAVOURS = ("openai", "azure", "vllm", "ollama")
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh")
C_DIMS = [f"C{i}" for i in range(10)]
D_DIMS = [f"D{i}" for i in range(15)]


@dataclass
class ServerState:
    latency_s: float = 0.0
    fault_queue: list[str] = field(default_factory=list)
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = FAULTS
    timeout_sleep_s: float = 3.0
    score: int = 8
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    # Answers chat requests that are not structured judgments (order probes, yes/no question
    # chains): takes the request, returns the message content. None: the judge's answer.
    responder: Callable[[dict[str, Any]], str] | None = None
    # Images: the side of the square the server draws (None: the requested size), and the
    # revised prompt it reports (None: none, like gpt-image models).
    image_side: int | None = None
    revised_prompt: str | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)  # images served by URL
    faults_served: Counter[str] = field(default_factory=Counter)
    answered_cases: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    # Prompt caching: a chat request whose system message this server has seen before
    # reports this many cached input tokens (usage.prompt_tokens_details.cached_tokens).
    cache_prefix_tokens: int = 0
    seen_prefixes: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Whole-endpoint behaviour (see the module docstring).
    flavour: str = "openai"  # openai, azure, vllm, ollama
    models: list[str] | None = field(default_factory=lambda: list(LISTED_MODELS))
    strict_models: bool = False  # a model not in ``models`` is a 404, as the real servers do
    required_key: str | None = None  # a request without this key is a 401
    hang_s: float = 0.0  # every request waits this long before it is answered
    models_forbidden: bool = False  # a restricted key: may call models, not list them
    hang_after: int | None = None  # POSTs answered before every later one hangs (hang_s)
    gets: list[str] = field(default_factory=list)  # GET paths asked for

    def next_fault(self) -> str | None:
        with self.lock:
            if self.fault_queue:
                return self.fault_queue.pop(0)
            if self.fault_rate and self.rng.random() < self.fault_rate:
                return self.rng.choice(self.fault_kinds)
            return None


def case_id_of(request: dict[str, Any]) -> str:
    return str(_spec(request).get("case_id", "?"))


def _user_text(request: dict[str, Any]) -> str:
    user = next(m for m in request["messages"] if m["role"] == "user")
    return "\n".join(part["text"] for part in user["content"] if part["type"] == "text")


def _spec(request: dict[str, Any]) -> dict[str, Any]:
    text = _user_text(request)
    found = re.search(r"Case specification \(JSON\):\n(.*?)\n\nNot applicable", text, re.S)
    spec: dict[str, Any] = json.loads(found.group(1)) if found else {}
    spec["nulls"] = re.search(r"MUST be null\): (.*?)\.\n", text).group(1).split(", ")  # type: ignore[union-attr]
    image = next(p for m in request["messages"] if m["role"] == "user"
                 for p in m["content"] if p["type"] == "image_url")
    spec["case_id"] = hashlib.sha256(image["image_url"]["url"].encode()).hexdigest()[:12]
    return spec


def answer_for(request: dict[str, Any], score: int) -> dict[str, Any]:
    """A valid judgment for the case in the request: deterministic per image."""
    spec = _spec(request)
    nulls = set(spec["nulls"])
    # A little variety per image, the same every time the same image is judged.
    offset = int(spec["case_id"][:2], 16) % 3 - 1

    def value(dim: str) -> int | None:
        return None if dim in nulls else max(0, min(10, score + offset))

    layout: dict[str, Any] = {"panel_count": 4, "is_2x2_grid": True, "order_as_expected": True,
                              "all_panels_readable": True}
    if spec.get("setting") == "scaffold":
        layout["top_left_matches_reference"] = True
    states = spec.get("expected_states", {})
    entities = spec.get("entities", {})
    return {
        "process": {
            "stages": {t: states.get(t, "?") for t in ("t1", "t2", "t3", "t4")},
            "actors": entities.get("actors", []), "target_objects": entities.get("targets", []),
            "tools": entities.get("tools", []),
            "non_target_objects": entities.get("non_targets", []), "anchors": [],
            "temporal_order": "; ".join(spec.get("temporal_constraints", [])),
            **{k: [] for k in ("causal_preconditions", "quantity_constraints",
                               "occlusion_constraints", "negations", "blocked_actions",
                               "gaze_tracking", "multi_agent_interaction",
                               "counterfactual_requirements")},
        },
        "layout": layout,
        "panels": [{"panel": i, "stage": f"t{i}", "observed": "as specified", "readable": True}
                   for i in range(1, 5)],
        "predicates": [{"id": p["id"], "evidence": "visible", "verdict": "holds"}
                       for p in spec.get("predicates", [])],
        "forbidden": [{"id": f["id"], "evidence": "not seen", "verdict": "absent"}
                      for f in spec.get("forbidden_states", [])],
        "capability": {d: {"score": value(d), "confidence": None if d in nulls else 0.8}
                       for d in C_DIMS},
        "diagnostic": {d: value(d) for d in D_DIMS},
        "failure_labels": [],
        "rationale": "Consistent sheet.",
    }


def _completion(content: str | None, finish: str = "stop", refusal: str | None = None,
                choices: bool = True) -> dict[str, Any]:
    message = {"role": "assistant", "content": content, "refusal": refusal}
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
        "model": "fake-judge",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}] if choices
        else [],
        "usage": {"prompt_tokens": 1500, "completion_tokens": 500, "total_tokens": 2000},
    }


class Handler(BaseHTTPRequestHandler):
    server: ChatServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_POST(self) -> None:
        state = self.server.state
        route = next((r for r in ROUTES if self.path.endswith(r)), None)
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        # Route first: the edits endpoint sends multipart/form-data, the others JSON.
        if route == EDITS_ROUTE:
            request = parse_multipart(self.headers.get("content-type", ""), body)
        else:
            request = json.loads(body)
        with state.lock:
            state.requests.append(request)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            state.paths.append(self.path)
        with state.lock:
            hangs = state.hang_s and (state.hang_after is None
                                      or len(state.requests) > state.hang_after)
        if hangs:
            time.sleep(state.hang_s)
        if route is None:
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        if self._refused(state, request):
            return
        with state.lock:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        self._counted = True
        try:
            if route == CHAT_ROUTE:
                self._answer(state, request)
            else:
                self._answer_image(state, request, edit=route == EDITS_ROUTE)
        finally:
            self._no_longer_in_flight()

    def _no_longer_in_flight(self) -> None:
        # Before the answer is written: the client may send its next request at once, and
        # its handler must not find this one still counted.
        if getattr(self, "_counted", False):
            self._counted = False
            with self.server.state.lock:
                self.server.state.in_flight -= 1

    def _answer(self, state: ServerState, request: dict[str, Any]) -> None:
        if state.latency_s:
            time.sleep(state.latency_s)
        fault = state.next_fault()
        if fault is not None:
            with state.lock:
                state.faults_served[fault] += 1
            self._fault(fault, request)
            return
        if state.responder is not None:
            completion = _completion(state.responder(request))
        else:
            with state.lock:
                state.answered_cases[case_id_of(request)] += 1
            completion = _completion(json.dumps(answer_for(request, state.score)))
        if state.cache_prefix_tokens:
            prefix = json.dumps(request["messages"][0], sort_keys=True)
            with state.lock:
                seen = prefix in state.seen_prefixes
                state.seen_prefixes.add(prefix)
            completion["usage"]["prompt_tokens_details"] = {
                "cached_tokens": state.cache_prefix_tokens if seen else 0}
        self._send(200, completion)

    def _fault(self, fault: str, request: dict[str, Any]) -> None:
        if self._transport_fault(
                fault, lambda: self._send(200, _completion(json.dumps(answer_for(request, 8)))),
                b'{"id": "chatcmpl-test", "choices": ['):
            return
        if fault == "schema":
            broken = answer_for(request, 8)
            del broken["diagnostic"]
            self._send(200, _completion(json.dumps(broken)))
        elif fault == "refusal":
            self._send(200, _completion(None, refusal="I cannot help with that."))
        elif fault == "empty":
            self._send(200, _completion("{}", choices=False))
        elif fault == "no_message":
            answer = _completion("{}")
            del answer["choices"][0]["message"]
            self._send(200, answer)
        elif fault == "truncated":
            text = json.dumps(answer_for(request, 8))
            self._send(200, _completion(text[: len(text) // 2], finish="length"))
        else:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")

    def _transport_fault(self, fault: str, answer: Callable[[], None],
                         malformed: bytes) -> bool:
        """Faults of any endpoint; False when ``fault`` is not one of them."""
        if fault == "429":
            self._send(429, {"error": {"message": "rate limited"}},
                       {"retry-after": "0", "retry-after-ms": "20"})
        elif fault in ("500", "503"):
            self._send(int(fault), {"error": {"message": f"server error {fault}"}})
        elif fault == "timeout":
            time.sleep(self.server.state.timeout_sleep_s)
            answer()
        elif fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
        elif fault == "malformed":
            self._send_raw(200, malformed)
        elif fault == "bad_request":
            self._send(400, {"error": {"message": "Invalid image: the image data is not "
                                                  "readable.", "type": "invalid_request_error",
                                       "param": None, "code": "invalid_image"}})
        elif fault == "quota":
            self._send(429, {"error": {"message": "You exceeded your current quota, please "
                                                  "check your plan and billing details.",
                                       "type": "insufficient_quota", "param": None,
                                       "code": "insufficient_quota"}})
        elif fault == "429_wait":
            self._send(429, {"error": {"message": "rate limited"}}, {"retry-after": "0.05"})
        else:
            return False
        return True

    # ------------------------------------------------------------ images

    def _answer_image(self, state: ServerState, request: dict[str, Any], edit: bool) -> None:
        if state.latency_s:
            time.sleep(state.latency_s)
        fault = state.next_fault()
        if fault is not None:
            with state.lock:
                state.faults_served[fault] += 1
            self._image_fault(fault, request, edit)
            return
        answer = images_response(request, edit, state.image_side, state.revised_prompt)
        if request.get("response_format") == "url":
            answer["data"] = [{"url": self._keep_file(base64.b64decode(item.pop("b64_json"))),
                               **item} for item in answer["data"]]
        self._send(200, answer)

    def _keep_file(self, data: bytes) -> str:
        """Where a GET fetches ``data`` later (``response_format=url``)."""
        with self.server.state.lock:
            name = f"{len(self.server.state.files)}.png"
            self.server.state.files[name] = data
        return f"{self.server.base_url}/files/{name}"

    # ------------------------------------------------------------ the endpoint's own rules

    def _key(self) -> str | None:
        given = self.headers.get("api-key") if self.server.state.flavour == "azure" else None
        bearer = self.headers.get("authorization", "")
        return given or (bearer[7:] if bearer.startswith("Bearer ") else None)

    def _refused(self, state: ServerState, request: dict[str, Any] | None) -> bool:
        """Answer as the endpoint would when the path, key, model or parameters are wrong;
        False when the request may go on."""
        flavour = state.flavour
        if flavour == "azure" and not self.path.startswith("/openai/v1/"):
            self._send(404, {"error": {"code": "404", "message": "Resource not found"}})
            return True
        if state.required_key is not None and self._key() != state.required_key:
            self._send(401, unauthorized_body(flavour, self._key()))
            return True
        if request is None:
            return False
        model = str(request.get("model", ""))
        if state.strict_models and state.models is not None and model not in state.models:
            self._send(404, unknown_model_body(flavour, model))
            return True
        problem = gpt5_problem(request) if flavour in ("openai", "azure") else None
        if problem is not None:
            self._send(400, {"error": problem})
            return True
        return False

    def do_GET(self) -> None:
        state = self.server.state
        with state.lock:
            state.gets.append(self.path)
        if self.path.endswith("/models"):
            if state.hang_s and state.hang_after is None:
                time.sleep(state.hang_s)
            if self._refused(state, None):
                return
            if state.models_forbidden:
                self._send(401, {"error": {
                    "message": "You have insufficient permissions for this operation. Missing "
                               "scopes: api.model.read. Check that you have the correct role "
                               "in your organization (Reader, Writer, Owner) and project.",
                    "type": "invalid_request_error", "param": None, "code": None}})
                return
            if state.models is None:
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            self._send(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 0, "owned_by": state.flavour}
                for m in state.models]})
            return
        name = self.path.rpartition("/files/")[2]
        data = self.server.state.files.get(name)
        if data is None:
            self._send(404, {"error": {"message": f"no file {self.path}"}})
            return
        self.send_response(200)
        self.send_header("content-type", "image/png")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _image_fault(self, fault: str, request: dict[str, Any], edit: bool) -> None:
        state = self.server.state
        if self._transport_fault(
                fault, lambda: self._send(200, images_response(request, edit, state.image_side)),
                b'{"created": 1, "data": ['):
            return
        if fault == "content_policy":
            self._send(400, {"error": {"message": REFUSAL_MESSAGE, "param": None,
                                       "type": "image_generation_user_error",
                                       "code": "moderation_blocked"}})
        elif fault == "no_data":
            self._send(200, {"created": int(time.time()), "data": []})
        elif fault == "bad_b64":
            self._send(200, {"created": int(time.time()), "data": [{"b64_json": "@@not base64"}]})
        elif fault == "not_image":
            text = base64.b64encode(b"this is not an image").decode("ascii")
            self._send(200, {"created": int(time.time()), "data": [{"b64_json": text}]})
        else:
            raise ValueError(f"unknown image fault {fault!r}; known: {', '.join(IMAGE_FAULTS)}")

    def _send(self, status: int, body: dict[str, Any],
              headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(body).encode(), headers)

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self._no_longer_in_flight()
        send_json_bytes(self, status, data, headers)


def send_json_bytes(handler: BaseHTTPRequestHandler, status: int, data: bytes,
                    headers: dict[str, str] | None = None) -> None:
    """Answer with ``data`` as a JSON body; a client that gave up (its timeout) gets nothing."""
    try:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def masked(key: str | None) -> str:
    """A key as OpenAI's 401 shows it: its first 8 and last 4 characters."""
    key = key or ""
    return key[:8] + "*" * max(0, len(key) - 12) + key[-4:] if len(key) > 12 else key


def unauthorized_body(flavour: str, key: str | None) -> dict[str, Any]:
    """What each server answers a request with a wrong or missing key (HTTP 401)."""
    if flavour == "vllm":
        return {"error": "Unauthorized"}
    if flavour == "azure":
        return {"error": {"code": "401", "message": "Access denied due to invalid subscription "
                          "key or wrong API endpoint. Make sure to provide a valid key for an "
                          "active subscription and use a correct regional API endpoint for "
                          "your resource."}}
    return {"error": {"message": f"Incorrect API key provided: {masked(key)}. You can find "
                                 f"your API key at https://platform.openai.com/account/api-keys.",
                      "type": "invalid_request_error", "param": None,
                      "code": "invalid_api_key"}}


def unknown_model_body(flavour: str, model: str) -> dict[str, Any]:
    """What each server answers for a model it does not have (HTTP 404)."""
    if flavour == "vllm":
        return {"error": {"message": f"The model `{model}` does not exist.",
                          "type": "NotFoundError", "param": "model", "code": 404}}
    if flavour == "ollama":
        return {"error": {"message": f'model "{model}" not found, try pulling it first',
                          "type": "api_error", "param": None, "code": None}}
    if flavour == "azure":
        return {"error": {"code": "DeploymentNotFound",
                          "message": "The API deployment for this resource does not exist. If "
                                     "you created the deployment within the last 5 minutes, "
                                     "please wait a moment and try again."}}
    return {"error": {"message": f"The model `{model}` does not exist or you do not have "
                                 f"access to it.", "type": "invalid_request_error",
                      "param": None, "code": "model_not_found"}}


def gpt5_problem(request: dict[str, Any]) -> dict[str, Any] | None:
    """OpenAI's 400 error for a request a gpt-5 model refuses; None when it takes it."""
    if not str(request.get("model", "")).startswith("gpt-5"):
        return None
    if "temperature" in request and request["temperature"] != 1:
        return {"message": f"Unsupported value: 'temperature' does not support "
                           f"{request['temperature']} with this model. Only the default (1) "
                           f"value is supported.", "type": "invalid_request_error",
                "param": "temperature", "code": "unsupported_value"}
    if "max_tokens" in request:
        return {"message": "Unsupported parameter: 'max_tokens' is not supported with this "
                           "model. Use 'max_completion_tokens' instead.",
                "type": "invalid_request_error", "param": "max_tokens",
                "code": "unsupported_parameter"}
    effort = request.get("reasoning_effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        return {"message": f"Invalid value: '{effort}'. Supported values are: "
                           + ", ".join(f"'{e}'" for e in REASONING_EFFORTS) + ".",
                "type": "invalid_request_error", "param": "reasoning_effort",
                "code": "invalid_value"}
    return None


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def parse_multipart(content_type: str, body: bytes) -> dict[str, Any]:
    """A multipart/form-data body as fields: text as str, files as dicts with their bytes."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n" + body)
    fields: dict[str, Any] = {}
    for part in message.iter_parts():
        name = str(part.get_param("name", header="content-disposition"))
        data = part.get_payload(decode=True)
        assert isinstance(data, bytes)
        filename = part.get_filename()
        fields[name] = data.decode() if filename is None else {
            "filename": filename, "content_type": part.get_content_type(), "data": data}
    return fields


def requested_side(request: dict[str, Any]) -> tuple[int, int]:
    """``size`` as (width, height); ``auto`` or none is 1024 x 1024 like the real API."""
    size = str(request.get("size") or "auto")
    if size == "auto":
        return 1024, 1024
    width, _, height = size.partition("x")
    return int(width), int(height)


def drawn_png(prompt: str, size: tuple[int, int]) -> bytes:
    """Four panels whose colours come from the prompt: the same prompt, the same PNG."""
    digest = hashlib.sha256(prompt.encode()).digest()
    image = Image.new("RGB", size, (255, 255, 255))
    draw = ImageDraw.Draw(image)
    width, height = size
    for panel in range(4):
        column, row = panel % 2, panel // 2
        colour = (digest[3 * panel], digest[3 * panel + 1], digest[3 * panel + 2])
        draw.rectangle((column * width // 2 + 2, row * height // 2 + 2,
                        (column + 1) * width // 2 - 3, (row + 1) * height // 2 - 3), fill=colour)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def images_response(request: dict[str, Any], edit: bool, side: int | None = None,
                    revised_prompt: str | None = None) -> dict[str, Any]:
    """What ``/images/generations`` and ``/images/edits`` answer for one image."""
    prompt = str(request.get("prompt", ""))
    size = (side, side) if side else requested_side(request)
    text_tokens = max(1, len(prompt) // 4)
    image_tokens = EDIT_INPUT_IMAGE_TOKENS if edit else 0
    item: dict[str, Any] = {"b64_json": base64.b64encode(drawn_png(prompt, size)).decode()}
    if revised_prompt is not None:
        item["revised_prompt"] = revised_prompt
    return {
        "created": int(time.time()), "data": [item],
        "background": "opaque", "output_format": "png", "size": f"{size[0]}x{size[1]}",
        "quality": request.get("quality", "medium"),
        "usage": {"input_tokens": text_tokens + image_tokens,
                  "input_tokens_details": {"text_tokens": text_tokens,
                                           "image_tokens": image_tokens},
                  "output_tokens": OUTPUT_IMAGE_TOKENS,
                  "output_tokens_details": {"image_tokens": OUTPUT_IMAGE_TOKENS,
                                            "text_tokens": 0},
                  "total_tokens": text_tokens + image_tokens + OUTPUT_IMAGE_TOKENS},
    }


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: ServerState) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = state

    @property
    def base_url(self) -> str:
        prefix = "/openai/v1" if self.state.flavour == "azure" else "/v1"
        return f"http://127.0.0.1:{self.server_address[1]}{prefix}"


@contextmanager
def chat_server(state: ServerState | None = None) -> Iterator[ChatServer]:
    server = ChatServer(state or ServerState())
    # A short poll: shutdown() waits up to one interval, once per test.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
