"""What the local servers of the hosted image APIs share (tests/fake_gemini.py,
fake_seedream.py, fake_bfl.py): a threading HTTP server on 127.0.0.1, the requests it saw,
a queue of faults, a required key, and the transport faults every API can show."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fake_openai import send_json_bytes

# Faults any of the APIs serves: its own error bodies, then a timeout, a reset connection and
# a body that is not JSON.
TRANSPORT_FAULTS = ("429", "500", "503", "timeout", "reset", "malformed")


@dataclass
class HostedState:
    required_key: str | None = None  # a request without it is refused as the API refuses
    # The model ids the API serves (a retired or misspelt one is its 404); None: any.
    served_models: set[str] | None = None
    fault_queue: list[str] = field(default_factory=list)
    latency_s: float = 0.0
    timeout_sleep_s: float = 3.0
    requests: list[dict[str, Any]] = field(default_factory=list)  # POST bodies
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # POST paths
    gets: list[str] = field(default_factory=list)
    get_headers: list[dict[str, str]] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)  # images served by URL
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)  # asynchronous APIs' tasks
    faults_served: Counter[str] = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def serves(self, model: str) -> bool:
        return self.served_models is None or model in self.served_models

    def next_fault(self) -> str | None:
        with self.lock:
            return self.fault_queue.pop(0) if self.fault_queue else None


class HostedHandler(BaseHTTPRequestHandler):
    server: HostedServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    @property
    def state(self) -> HostedState:
        return self.server.state

    def read_json(self) -> dict[str, Any]:
        length = int(self.headers.get("content-length", "0"))
        body: dict[str, Any] = json.loads(self.rfile.read(length) or b"{}")
        with self.state.lock:
            self.state.requests.append(body)
            self.state.headers.append({k.lower(): v for k, v in self.headers.items()})
            self.state.paths.append(self.path)
        return body

    def note_get(self) -> None:
        with self.state.lock:
            self.state.gets.append(self.path)
            self.state.get_headers.append({k.lower(): v for k, v in self.headers.items()})

    def serve_file(self) -> bool:
        """A GET of a file kept with ``keep_file``; False when the path is not one."""
        name = self.path.rpartition("/files/")[2].partition("?")[0]
        if "/files/" not in self.path:
            return False
        data = self.state.files.get(name)
        if data is None:
            self.send_json(404, {"error": "no such file"})
            return True
        self.send_response(200)
        self.send_header("content-type", "image/png")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        return True

    def keep_file(self, data: bytes) -> str:
        with self.state.lock:
            name = f"{len(self.state.files)}.png"
            self.state.files[name] = data
        return f"{self.server.url}/files/{name}?X-Signature=abc"

    def enter(self) -> None:
        with self.state.lock:
            self.state.in_flight += 1
            self.state.max_in_flight = max(self.state.max_in_flight, self.state.in_flight)
        self._counted = True
        if self.state.latency_s:
            time.sleep(self.state.latency_s)

    def leave(self) -> None:
        # Also called before an answer is written: the client may send its next request at
        # once, and its handler must not find this one still counted.
        if getattr(self, "_counted", False):
            self._counted = False
            with self.state.lock:
                self.state.in_flight -= 1

    def transport_fault(self, fault: str, error: dict[str, Any], ok: dict[str, Any]) -> bool:
        """Serve ``fault`` when it is a transport fault: ``error`` is the API's error body for
        the status, ``ok`` the answer a timed-out request gets too late. False otherwise."""
        with self.state.lock:
            self.state.faults_served[fault] += 1
        if fault in ("429", "500", "503"):
            self.send_json(int(fault), error, {"retry-after": "0"} if fault == "429" else None)
        elif fault == "timeout":
            time.sleep(self.state.timeout_sleep_s)
            self.send_json(200, ok)
        elif fault == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
        elif fault == "malformed":
            self.send_raw(200, b'{"data": [')
        else:
            return False
        return True

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.send_raw(status, json.dumps(body).encode(), headers)

    def send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.leave()
        send_json_bytes(self, status, data, headers)


class HostedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, state: HostedState, handler: type[HostedHandler]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.state = state

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def hosted_server(handler: type[HostedHandler],
                  state: HostedState | None = None) -> Iterator[HostedServer]:
    server = HostedServer(state or HostedState(), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
