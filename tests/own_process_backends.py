"""A backend for the tests of drawing in a process of its own (tests/models/test_own_process.py).

It lives in an importable module so that a spawned child can build it from a
``functools.partial``. What it does is chosen by the request's prompt, so one child can be
asked to draw, to fail in each way, and to die.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image

from pytest_imagetime.models.base import Generated, GenerationRequest, ModelError

DRAW = "draw"
MODEL_ERROR = "model-error"
OTHER_ERROR = "other-error"
UNPICKLABLE = "unpicklable"
UNREADABLE = "unreadable"
SPAWNS = "spawns"
EXIT = "exit"
KILL = "kill"
SLOW = "slow"  # draws for SLOW_S seconds

SLOW_S = 2.0
# Each drawing the child starts and ends, "<seed> <action> start|end" a line, when set.
DRAW_LOG = "IMAGETIME_TEST_DRAW_LOG"

MODEL_ERROR_TEXT = "no room left on the device for this sheet"
OTHER_ERROR_TEXT = "the pipeline lost its scheduler"
EXIT_CODE = 3


def _refuse_to_load() -> None:
    raise RuntimeError("this answer cannot be rebuilt here")


class Unreadable:
    """Pickles in the child, and fails to unpickle in the parent."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return _refuse_to_load, ()


class ChildBackend:
    """Draws a flat sheet and says which process drew it; see the module."""

    def __init__(self, on_gpu: bool = True) -> None:
        self._on_gpu = on_gpu

    @property
    def name(self) -> str:
        return "child-test"

    @property
    def draws_on_gpu(self) -> bool:
        return self._on_gpu

    def config(self) -> Mapping[str, Any]:
        return {"backend": "child-test"}

    def generate(self, *, request: GenerationRequest) -> Generated:
        action = request.text
        _log(f"{request.seed} {action} start")
        try:
            return self._generate(request, action)
        finally:
            _log(f"{request.seed} {action} end")

    def _generate(self, request: GenerationRequest, action: str) -> Generated:
        if action == SLOW:
            time.sleep(SLOW_S)
        if action == MODEL_ERROR:
            raise ModelError(MODEL_ERROR_TEXT)
        if action == OTHER_ERROR:
            raise RuntimeError(OTHER_ERROR_TEXT)  # the line test_own_process looks for
        if action == EXIT:
            os._exit(EXIT_CODE)
        if action == KILL:
            os.kill(os.getpid(), signal.SIGKILL)
        image = Image.new("RGB", (request.size, request.size), (request.seed % 256, 0, 0))
        if action == UNPICKLABLE:
            return Generated(image, {"lock": threading.Lock()})
        if action == UNREADABLE:
            return Generated(image, {"odd": Unreadable()})
        if action == SPAWNS:  # a backend's own worker process, as data loaders start
            worker = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
            worker.start()
            worker.join()
            return Generated(image, {"pid": os.getpid(), "worker_exit": worker.exitcode})
        return Generated(image, {"pid": os.getpid(), "seed": request.seed})


def _log(line: str) -> None:
    path = os.environ.get(DRAW_LOG)
    if path:
        with open(path, "a") as log:
            log.write(line + "\n")


class BatchChildBackend(ChildBackend):
    """The same backend, drawing several requests in one call."""

    def generate_batch(self, *, requests: Sequence[GenerationRequest]) -> list[Generated]:
        return [self.generate(request=request) for request in requests]
