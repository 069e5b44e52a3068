"""A real HTTP server on 127.0.0.1 that speaks the Chat Completions protocol, for tests.

It reads the case specification out of the judge's request and answers like a careful
judge would (every applicable dimension scored, every predicate and forbidden state
answered), so the real ``openai`` client and the real judge code run end to end. Faults can
be injected: a queue of named faults, and/or a seeded random rate.
"""

from __future__ import annotations

import hashlib
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

FAULTS = ("429", "500", "503", "timeout", "reset", "malformed", "schema", "refusal", "empty",
          "truncated")
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
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    faults_served: Counter[str] = field(default_factory=Counter)
    answered_cases: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

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

    return {
        "process": f"The prompt asks for: {spec.get('concept', '?')}.",
        "panels": [{"panel": i, "stage": f"t{i}", "observed": "as specified", "readable": True}
                   for i in range(1, 5)],
        "layout": {"panel_count": 4, "is_2x2_grid": True, "order_as_expected": True},
        "capability": {d: {"score": value(d), "confidence": None if d in nulls else 0.8}
                       for d in C_DIMS},
        "diagnostic": {d: value(d) for d in D_DIMS},
        "predicates": [{"id": p["id"], "verdict": "holds", "evidence": "visible"}
                       for p in spec.get("predicates", [])],
        "forbidden": [{"id": f["id"], "verdict": "absent", "evidence": "not seen"}
                      for f in spec.get("forbidden_states", [])],
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
        length = int(self.headers.get("content-length", "0"))
        request = json.loads(self.rfile.read(length))
        with state.lock:
            state.requests.append(request)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        with state.lock:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            self._answer(state, request)
        finally:
            with state.lock:
                state.in_flight -= 1

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
            self._send(200, _completion(state.responder(request)))
            return
        with state.lock:
            state.answered_cases[case_id_of(request)] += 1
        answer = answer_for(request, state.score)
        self._send(200, _completion(json.dumps(answer)))

    def _fault(self, fault: str, request: dict[str, Any]) -> None:
        if fault == "429":
            self._send(429, {"error": {"message": "rate limited"}},
                       {"retry-after": "0", "retry-after-ms": "20"})
        elif fault in ("500", "503"):
            self._send(int(fault), {"error": {"message": f"server error {fault}"}})
        elif fault == "timeout":
            time.sleep(self.server.state.timeout_sleep_s)
            self._send(200, _completion(json.dumps(answer_for(request, 8))))
        elif fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
        elif fault == "malformed":
            self._send_raw(200, b'{"id": "chatcmpl-test", "choices": [')
        elif fault == "schema":
            broken = answer_for(request, 8)
            del broken["diagnostic"]
            self._send(200, _completion(json.dumps(broken)))
        elif fault == "refusal":
            self._send(200, _completion(None, refusal="I cannot help with that."))
        elif fault == "empty":
            self._send(200, _completion("{}", choices=False))
        elif fault == "truncated":
            text = json.dumps(answer_for(request, 8))
            self._send(200, _completion(text[: len(text) // 2], finish="length"))
        else:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")

    def _send(self, status: int, body: dict[str, Any],
              headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(body).encode(), headers)

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout): nothing to answer


class ChatServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: ServerState) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = state

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


@contextmanager
def chat_server(state: ServerState | None = None) -> Iterator[ChatServer]:
    server = ChatServer(state or ServerState())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
