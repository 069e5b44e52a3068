"""A real HTTP server on 127.0.0.1 that speaks OpenAI's Files and Batch APIs, for tests.

Files: upload (multipart, ``purpose``), retrieve, download (``/files/{id}/content``).
Batches: create (``input_file_id``, ``endpoint``, ``completion_window``), retrieve, list,
cancel. A batch is validated as the documented API does it (the file must exist and have
purpose ``batch``; every line needs a ``custom_id`` unique in the file, ``method`` POST and
the batch's ``url``), then walks validating -> in_progress -> finalizing -> completed over
``polls_to_finish`` looks at it. Each line is answered like the Chat Completions server in
``fake_openai`` answers a request; the answers go to the output file and the failures to the
error file, in the documented line format. Batches can be made to fail, expire or be
cancelled, and single lines to get an invalid answer or an error status. Errors have the
API's shape: ``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.fake_openai import (
    ChatServer,
    Handler,
    ServerState,
    _completion,
    answer_for,
    parse_multipart,
)

MAX_LINES = 50_000
ENDPOINTS = ("/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/completions")


@dataclass
class BatchState(ServerState):
    uploads: dict[str, dict[str, Any]] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    polls_to_finish: int = 2  # looks at a batch before it has completed
    # How the next batches end: "completed", "failed", "expired" (half the lines answered)
    # or "cancelled" (none); one entry per batch, then "completed".
    outcomes: list[str] = field(default_factory=list)
    # What the next answered lines get, one entry per line: "ok", "invalid" (an answer that
    # is no JSON), or an HTTP status such as "500" or "400"; then "ok".
    line_faults: list[str] = field(default_factory=list)
    batch_api: bool = True  # False: a server without /v1/batches (404), like vLLM's
    key: str | None = None  # when set, requests without "Bearer <key>" get a 401
    refuse_creates: str | None = None  # when set, creating a batch gets a 400 with it
    lines_answered: int = 0
    creates: int = 0
    retrieves: int = 0
    uploads_made: int = 0
    http: Counter[str] = field(default_factory=Counter)  # every request, as "POST /files"


class BatchHandler(Handler):
    server: BatchServer

    def _count(self) -> None:
        path = self.path.split("?", 1)[0]
        route = "/".join(part if not part.startswith(("batch_", "file-")) else "{id}"
                         for part in path.split("/")[2:])
        with self.server.state.lock:
            self.server.state.http[f"{self.command} /{route}"] += 1

    def do_POST(self) -> None:
        self._count()
        if self._batch_refused():
            return
        if self.path.endswith("/files"):
            self._upload()
        elif self.path.endswith("/batches"):
            self._create()
        elif self.path.endswith("/cancel") and "/batches/" in self.path:
            self._cancel(self.path.rsplit("/", 2)[-2])
        else:
            super().do_POST()

    def do_GET(self) -> None:
        self._count()
        if self._batch_refused():
            return
        path = self.path.split("?", 1)[0]
        if path.endswith("/batches"):
            self._list()
        elif "/batches/" in path:
            self._retrieve(path.rsplit("/", 1)[-1])
        elif path.endswith("/content") and "/files/" in path:
            self._content(path.rsplit("/", 2)[-2])
        elif "/files/" in path and path.rsplit("/", 1)[-1] in self.server.state.uploads:
            self._send(200, self.server.state.uploads[path.rsplit("/", 1)[-1]]["object"])
        else:
            super().do_GET()

    # ------------------------------------------------------------ errors

    def _error(self, status: int, message: str, param: str | None = None,
               code: str | None = None, kind: str = "invalid_request_error") -> None:
        self._send(status, {"error": {"message": message, "type": kind, "param": param,
                                      "code": code}})

    def _batch_refused(self) -> bool:
        state = self.server.state
        if ("/batches" in self.path or "/files" in self.path) and not state.batch_api:
            self._error(404, f"Unrecognized request URL (POST {self.path}).",
                        code="unknown_url")
            return True
        expected = None if state.key is None else f"Bearer {state.key}"
        if expected is not None and self.headers.get("authorization") != expected:
            self._error(401, "Incorrect API key provided: sk-wrong***. You can find your API "
                             "key at https://platform.openai.com/account/api-keys.",
                        code="invalid_api_key")
            return True
        return False

    # ------------------------------------------------------------ files

    def _upload(self) -> None:
        state = self.server.state
        length = int(self.headers.get("content-length", "0"))
        fields = parse_multipart(self.headers.get("content-type", ""), self.rfile.read(length))
        upload = fields.get("file")
        purpose = fields.get("purpose")
        if not isinstance(upload, dict):
            self._error(400, "Missing required parameter: 'file'.", "file")
            return
        if purpose not in ("batch", "assistants", "fine-tune", "vision", "user_data"):
            self._error(400, f"'{purpose}' is not one of ['assistants', 'batch', 'fine-tune', "
                             f"'vision', 'user_data'] - 'purpose'", "purpose")
            return
        with state.lock:
            state.uploads_made += 1
            file_id = f"file-{state.uploads_made:06d}"
            obj = {"id": file_id, "object": "file", "bytes": len(upload["data"]),
                   "created_at": int(time.time()), "filename": upload.get("filename") or "",
                   "purpose": purpose, "status": "processed", "expires_at": None,
                   "status_details": None}
            state.uploads[file_id] = {"object": obj, "data": upload["data"]}
        self._send(200, obj)

    def _content(self, file_id: str) -> None:
        upload = self.server.state.uploads.get(file_id)
        if upload is None:
            self._error(404, f"No such File object: {file_id}", "id")
            return
        self._send_raw(200, upload["data"], {"content-type": "application/octet-stream"})

    def _keep(self, data: bytes, purpose: str, name: str) -> str:
        """A file the server made (its lock is held: _retrieve finishes the batch)."""
        state = self.server.state
        state.uploads_made += 1
        file_id = f"file-{state.uploads_made:06d}"
        state.uploads[file_id] = {"object": {
            "id": file_id, "object": "file", "bytes": len(data),
            "created_at": int(time.time()), "filename": name, "purpose": purpose,
            "status": "processed"}, "data": data}
        return file_id

    # ------------------------------------------------------------ batches

    def _create(self) -> None:
        state = self.server.state
        length = int(self.headers.get("content-length", "0"))
        request = json.loads(self.rfile.read(length))
        if state.refuse_creates is not None:
            self._error(400, state.refuse_creates, code="billing_hard_limit_reached")
            return
        endpoint = request.get("endpoint")
        if endpoint not in ENDPOINTS:
            self._error(400, f"Invalid value: '{endpoint}'. Supported values are: "
                             f"{', '.join(ENDPOINTS)}.", "endpoint")
            return
        if request.get("completion_window") != "24h":
            self._error(400, "Invalid value for 'completion_window': only '24h' is supported.",
                        "completion_window")
            return
        upload = state.uploads.get(str(request.get("input_file_id")))
        if upload is None:
            self._error(404, f"No such File object: {request.get('input_file_id')}",
                        "input_file_id")
            return
        now = int(time.time())
        with state.lock:
            state.creates += 1
            batch_id = f"batch_{state.creates:06d}"
            outcome = state.outcomes.pop(0) if state.outcomes else "completed"
            batch = {
                "id": batch_id, "object": "batch", "endpoint": endpoint,
                "input_file_id": request["input_file_id"], "completion_window": "24h",
                "status": "validating", "output_file_id": None, "error_file_id": None,
                "created_at": now, "in_progress_at": None, "expires_at": now + 86400,
                "finalizing_at": None, "completed_at": None, "failed_at": None,
                "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                "request_counts": {"total": 0, "completed": 0, "failed": 0},
                "metadata": request.get("metadata"), "errors": None,
                "_looks": 0, "_outcome": outcome,
            }
            problems = self._validate(upload, endpoint)
            if upload["object"]["purpose"] != "batch":
                problems = [{"code": "invalid_file_purpose", "line": None, "param": None,
                             "message": "The input file must have purpose 'batch'."}]
            if problems:
                batch.update(status="failed", failed_at=now,
                             errors={"object": "list", "data": problems})
            state.batches[batch_id] = batch
        self._send(200, _public(batch))

    def _validate(self, upload: dict[str, Any], endpoint: str) -> list[dict[str, Any]]:
        seen: set[str] = set()
        lines = upload["data"].decode("utf-8").splitlines()
        if len(lines) > MAX_LINES:
            return [{"code": "too_many_requests", "line": None, "param": None,
                     "message": f"A batch may contain up to {MAX_LINES} requests."}]
        for number, raw in enumerate(lines, 1):
            try:
                line = json.loads(raw)
            except ValueError:
                return [{"code": "invalid_json_line", "line": number, "param": None,
                         "message": "This line is not parseable as valid JSON."}]
            custom_id = line.get("custom_id")
            if not isinstance(custom_id, str) or custom_id in seen:
                return [{"code": "duplicate_custom_id", "line": number, "param": "custom_id",
                         "message": "The custom_id for this request is a duplicate of "
                                    "another request. The custom_id parameter must be unique "
                                    "for each request in a batch."}]
            seen.add(custom_id)
            if line.get("method") != "POST" or line.get("url") != endpoint:
                return [{"code": "mismatched_endpoint", "line": number, "param": "url",
                         "message": f"The url of this request does not match the batch's "
                                    f"endpoint {endpoint}."}]
        return []

    def _retrieve(self, batch_id: str) -> None:
        state = self.server.state
        with state.lock:
            state.retrieves += 1
            batch = state.batches.get(batch_id)
            if batch is None:
                self._error(404, f"No batch found with id '{batch_id}'.", "batch_id")
                return
            self._advance(batch)
            public = _public(batch)
        self._send(200, public)

    def _list(self) -> None:
        state = self.server.state
        with state.lock:
            data = [_public(b) for b in reversed(list(state.batches.values()))]
        self._send(200, {"object": "list", "data": data,
                         "first_id": data[0]["id"] if data else None,
                         "last_id": data[-1]["id"] if data else None, "has_more": False})

    def _cancel(self, batch_id: str) -> None:
        state = self.server.state
        with state.lock:
            batch = state.batches.get(batch_id)
            if batch is None:
                self._error(404, f"No batch found with id '{batch_id}'.", "batch_id")
                return
            if batch["status"] in ("validating", "in_progress", "finalizing"):
                batch.update(status="cancelling", cancelling_at=int(time.time()),
                             _outcome="cancelled")
            public = _public(batch)
        self._send(200, public)

    def _advance(self, batch: dict[str, Any]) -> None:
        """One more look at the batch: it moves on, and ends at the last one."""
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            return
        batch["_looks"] += 1
        now = int(time.time())
        state = self.server.state
        total = len(state.uploads[batch["input_file_id"]]["data"].splitlines())
        batch["request_counts"]["total"] = total
        if batch["_looks"] < state.polls_to_finish:
            if batch["status"] == "validating":
                batch.update(status="in_progress", in_progress_at=now)
            return
        self._finish(batch, now)

    def _finish(self, batch: dict[str, Any], now: int) -> None:
        outcome = batch["_outcome"]
        if outcome == "failed":
            batch.update(status="failed", failed_at=now, errors={"object": "list", "data": [
                {"code": "token_limit_exceeded", "line": None, "param": None,
                 "message": "Enqueued token limit reached for this model."}]})
            return
        lines = self.server.state.uploads[batch["input_file_id"]]["data"].decode().splitlines()
        answer_count = {"expired": len(lines) // 2, "cancelled": 0}.get(outcome, len(lines))
        output: list[str] = []
        errors: list[str] = []
        for number, raw in enumerate(lines):
            line = json.loads(raw)
            if number >= answer_count:
                code = "batch_expired" if outcome == "expired" else "batch_cancelled"
                errors.append(json.dumps({
                    "id": f"batch_req_{number}", "custom_id": line["custom_id"],
                    "response": None, "error": {"code": code, "message":
                        "This request could not be executed before the completion window "
                        "expired." if outcome == "expired" else "This request was cancelled."}}))
                continue
            status, body = self._answer_line(line["body"])
            entry = json.dumps({"id": f"batch_req_{number}", "custom_id": line["custom_id"],
                                "response": {"status_code": status,
                                             "request_id": f"req_{number}", "body": body},
                                "error": None})
            (output if status == 200 else errors).append(entry)
        counts = batch["request_counts"]
        counts.update(completed=len(output), failed=len(errors))
        if output:
            batch["output_file_id"] = self._keep(("\n".join(output) + "\n").encode(),
                                                 "batch_output", f"{batch['id']}_output.jsonl")
        if errors:
            batch["error_file_id"] = self._keep(("\n".join(errors) + "\n").encode(),
                                                "batch_output", f"{batch['id']}_error.jsonl")
        stamp = {"completed": "completed_at", "expired": "expired_at",
                 "cancelled": "cancelled_at"}[outcome]
        batch.update(status=outcome, finalizing_at=now, **{stamp: now})

    def _answer_line(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        state = self.server.state  # its lock is held: _retrieve finishes the batch
        fault = state.line_faults.pop(0) if state.line_faults else "ok"
        state.lines_answered += 1
        state.requests.append(body)
        if fault.isdigit():
            return int(fault), {"error": {"message": f"fault {fault} served by the test server",
                                          "type": "server_error", "param": None, "code": None}}
        content = "this is not JSON" if fault == "invalid" else json.dumps(
            answer_for(body, state.score))
        completion = _completion(content)
        if state.cache_prefix_tokens:
            prefix = json.dumps(body["messages"][0], sort_keys=True)
            seen = prefix in state.seen_prefixes
            state.seen_prefixes.add(prefix)
            completion["usage"]["prompt_tokens_details"] = {
                "cached_tokens": state.cache_prefix_tokens if seen else 0}
        return 200, completion


def _public(batch: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in batch.items() if not k.startswith("_")}


class BatchServer(ChatServer):
    state: BatchState

    def __init__(self, state: BatchState) -> None:
        super(ChatServer, self).__init__(("127.0.0.1", 0), BatchHandler)
        self.state = state


@contextmanager
def batch_server(state: BatchState | None = None) -> Iterator[BatchServer]:
    server = BatchServer(state or BatchState())
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
