"""A local server that speaks Black Forest Labs' API as documented: ``POST /v1/{model}`` with an
``x-key`` header answers ``id`` and ``polling_url``; ``GET /v1/get_result?id=`` answers
``Pending`` a set number of times, then ``Ready`` with ``result.sample`` (a signed URL on this
server), or a moderation or error status; ``GET /v1/credits`` checks the key. Errors are
FastAPI's ``{"detail": ...}`` bodies (403 for a wrong key, 402 without credits, 422 for a
bad body)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fake_hosted import TRANSPORT_FAULTS, HostedHandler
from tests.fake_openai import drawn_png

FAULTS = (*TRANSPORT_FAULTS, "request_moderated", "content_moderated", "task_error",
          "not_found", "no_credits", "unprocessable", "poll_500")
MODERATION_REASONS = ["Derivative Works Filter"]
COST_CREDITS = 3.0


class BflHandler(HostedHandler):
    pending_polls = 1  # polls answered Pending before a task is Ready

    def _key_ok(self) -> bool:
        required = self.state.required_key
        if required is not None and self.headers.get("x-key") != required:
            self.send_json(403, {"detail": "Not authenticated - Invalid Authentication"})
            return False
        return True

    def do_GET(self) -> None:
        self.note_get()
        if self.serve_file():
            return
        if not self._key_ok():
            return
        parts = urlsplit(self.path)
        if parts.path == "/v1/credits":
            self.send_json(200, {"credits": 1234.5})
        elif parts.path == "/v1/get_result":
            self.poll(parse_qs(parts.query).get("id", [""])[0])
        else:
            self.send_json(404, {"detail": "Not Found"})

    def poll(self, task_id: str) -> None:
        task = self.state.tasks.get(task_id)
        if task is None:
            self.send_json(200, {"id": task_id, "status": "Task not found"})
            return
        if task["fault"] == "poll_500" and not task.get("served"):
            task["served"] = True
            self.send_json(500, {"detail": "Internal Server Error"})
            return
        task["polls"] += 1
        if task["polls"] <= self.pending_polls:
            self.send_json(200, {"id": task_id, "status": "Pending", "result": None,
                                 "progress": 0.5})
            return
        fault = task["fault"]
        if fault == "request_moderated":
            self.send_json(200, {"id": task_id, "status": "Request Moderated", "result": None,
                                 "details": {"moderation_reasons": MODERATION_REASONS}})
        elif fault == "content_moderated":
            self.send_json(200, {"id": task_id, "status": "Content Moderated", "result": None,
                                 "details": {"moderation_reasons": ["NSFW"]}})
        elif fault == "task_error":
            self.send_json(200, {"id": task_id, "status": "Error", "result": None,
                                 "details": {"error": "generation failed"}})
        else:
            body = task["body"]
            png = drawn_png(str(body["prompt"]), (int(body["width"]), int(body["height"])))
            self.send_json(200, {"id": task_id, "status": "Ready", "result": {
                "sample": self.keep_file(png), "prompt": body["prompt"], "seed": body.get("seed"),
                "start_time": time.time() - 1, "end_time": time.time(), "duration": 1.0}})

    def do_POST(self) -> None:
        body = self.read_json()
        if not self.path.startswith("/v1/flux-"):
            self.send_json(404, {"detail": "Not Found"})
            return
        if not self._key_ok():
            return
        if not self.state.serves(self.path.partition("?")[0].rpartition("/")[2]):
            self.send_json(404, {"detail": "Not Found"})  # a model without an endpoint
            return
        self.enter()
        try:
            self.submit(body)
        finally:
            self.leave()

    def submit(self, body: dict[str, Any]) -> None:
        tasks = self.state.tasks
        task_id = f"task-{len(tasks)}"
        answer = {"id": task_id, "polling_url": f"{self.server.url}/v1/get_result?id={task_id}",
                  "cost": COST_CREDITS, "input_mp": 0.0, "output_mp": 0.02}
        fault = self.state.next_fault()
        if fault == "not_found":
            answer["polling_url"] = f"{self.server.url}/v1/get_result?id=lost"
        elif fault == "no_credits":
            self.send_json(402, {"detail": "Insufficient credits"})
            return
        elif fault == "unprocessable":
            self.send_json(422, {"detail": [{"loc": ["body", "width"], "msg": "Input should be "
                                             "a multiple of 16", "type": "value_error"}]})
            return
        elif fault is not None and self.transport_fault(
                fault, {"detail": f"server error {fault}"}, answer):
            return
        tasks[task_id] = {"body": body, "polls": 0, "fault": fault}
        self.send_json(200, answer)
