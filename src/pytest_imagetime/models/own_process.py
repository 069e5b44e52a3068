"""Drawing in a process of its own (``--imagetime-model-process``).

A backend that draws on a GPU from this process shares one interpreter lock with all the
rest the harness does for each sheet: pytest's protocol, encoding the PNG, the pixel facts,
the judge. Dispatching a pipeline's kernels is Python work that needs the lock too, so with a
fast pipeline every millisecond the harness holds it is a millisecond the GPU waits. In a
child process the backend has an interpreter to itself, and this process stores, measures
and judges one sheet while the child draws the next.

The child starts on the first drawing, so a resumed run with nothing to draw never starts
one; it is spawned (CUDA does not survive a fork) and builds the backend from the same spec
and options, so it draws on the device this process would have used. A backend's failure
comes back as that call's ModelError. A child that dies (a crash in a kernel, the kernel's
OOM killer) fails the calls in flight with its exit status, and the next call starts a new
one. Everything else (name, config, batching, what the pipeline asks of the backend) is
answered here by a local instance of the backend that never draws.

The pipeline sends the child the calls it will make next (``draw_ahead``), so the child starts
each drawing as soon as it has sent the last one back: the time this process takes to take an
answer in, store it and ask for the next one (with its interpreter lock shared by pytest, the
judge and the measuring threads) no longer leaves the GPU waiting. A call whose request was
sent ahead takes that answer; an answer no call asks for (the store changed, the run stops)
is dropped.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import signal
import threading
import weakref
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .base import (
    JSON,
    Generated,
    GenerationRequest,
    ImageModel,
    ModelError,
    ModelOptions,
    adapt_model,
    describe_failure,
)

if TYPE_CHECKING:
    import queue
    import sys

    if sys.platform == "win32":  # Pipe() gives named-pipe connections there
        from multiprocessing.connection import PipeConnection as Connection
    else:
        from multiprocessing.connection import Connection

PROCESS_CHOICES = ("auto", "on", "off")
STOP = None  # the message that ends the child
JOIN_TIMEOUT_S = 10.0
AHEAD_LIMIT = 4  # calls sent ahead and not yet taken, at most (each holds one answer)


def may_draw_in_own_process(model: ImageModel, choice: str) -> bool:
    """``on``: always; ``off``: never; ``auto``: when the backend may draw on a GPU
    (``may_draw_on_gpu``; whether it does is read only at the first drawing: it may need
    torch to answer)."""
    if choice == "on":
        return True
    return choice == "auto" and model.may_draw_on_gpu


class OwnProcessModel(ImageModel):
    """A backend whose drawings are made in a child process; see the module."""

    def __init__(self, factory: Callable[[], Any], local: object, choice: str) -> None:
        self._local = adapt_model(local, str(getattr(local, "name", type(local).__name__)))
        self._choice = choice
        self._child = DrawingProcess(factory, self._local.name)

    @property
    def name(self) -> str:
        return self._local.name

    def config(self) -> Mapping[str, JSON]:
        return self._local.config()

    @functools.cached_property
    def in_own_process(self) -> bool:
        """Whether drawings go to the child (``auto``: where the backend draws on a GPU)."""
        return self._choice == "on" or self._local.draws_on_gpu

    def generate(self, *, request: GenerationRequest) -> Generated:
        if not self.in_own_process:
            return self._local.generate(request=request)
        result: Generated = self._child.call("generate", {"request": request})
        return result

    def generate_batch(self, *, requests: Sequence[GenerationRequest]) -> list[Generated]:
        if not self.in_own_process:
            return self._local.generate_batch(requests=requests)
        result: list[Generated] = self._child.call("generate_batch",
                                                   {"requests": list(requests)})
        return result

    def draw_ahead(self, *, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> bool:
        """Send the child the calls that will be made next, in order (see the module), leaving
        out those it has queued already; nothing when drawing here, or before the first
        drawing has started the child. Whether every call is queued: the first that cannot
        be stops the rest, which would otherwise be drawn before it."""
        if not self.in_own_process:
            return False
        return all(self._child.send_ahead(method, arguments) for method, arguments in calls)

    @property
    def drawing_pid(self) -> int | None:
        """The child's process id while one runs."""
        return self._child.pid

    def close(self) -> None:
        self._child.stop()

    # What the pipeline asks of the backend is answered by the local instance.

    @property
    def concurrency(self) -> int:
        return self._local.concurrency

    @property
    def cpu_bound(self) -> bool:
        return self._local.cpu_bound

    @property
    def accepts_reference(self) -> bool:
        return self._local.accepts_reference

    @property
    def supports_batch(self) -> bool:
        return self._local.supports_batch

    @property
    def may_draw_on_gpu(self) -> bool:
        return self._local.may_draw_on_gpu

    @property
    def draws_on_gpu(self) -> bool:
        return self._local.draws_on_gpu

    def input_token(self, *, request: GenerationRequest) -> str | None:
        return self._local.input_token(request=request)

    def check_selection(self, *, case_ids: Sequence[str]) -> None:
        self._local.check_selection(case_ids=case_ids)

    def __getattr__(self, name: str) -> Any:
        # Attributes of the backend's own (a directory, settings) stay reachable.
        if "_local" not in self.__dict__:  # being copied or unpickled: not built yet
            raise AttributeError(name)
        return getattr(self.__dict__["_local"], name)


class DrawingProcess:
    """One child process holding one backend, called one request at a time."""

    def __init__(self, factory: Callable[[], Any], name: str) -> None:
        self._factory = factory
        self._name = name
        self._lock = threading.Lock()
        self._process: Any = None  # multiprocessing's SpawnProcess
        self._connection: Connection | None = None
        self._ahead: deque[bytes] = deque()  # requests sent ahead, their answers not taken

    @property
    def pid(self) -> int | None:
        return None if self._process is None else int(self._process.pid)

    def call(self, method: str, arguments: Mapping[str, Any]) -> Any:
        import pickle

        request = self._pickled(method, arguments)
        with self._lock:
            answer = self._answer_ahead(request)
            if answer is None:
                connection = self._sent(request)
                try:
                    answer = connection.recv_bytes()
                except (EOFError, OSError) as exc:
                    raise ModelError(self._lost(exc)) from None
        try:
            status, value = pickle.loads(answer)
        except Exception as exc:
            raise ModelError(f"the answer of the process drawing for {self._name} cannot be "
                             f"read here: {describe_failure(exc)}") from None
        if status == "ok":
            return value
        raise ModelError(str(value))

    def send_ahead(self, method: str, arguments: Mapping[str, Any]) -> bool:
        """Queue a call in the running child before it is made (once: a request already
        queued is not sent again); see ``call``. Whether it is queued."""
        try:
            request = self._pickled(method, arguments)
        except ModelError:
            return False  # the call itself will say why
        with self._lock:
            if request in self._ahead:
                return True
            connection = self._connection
            if connection is None or len(self._ahead) >= AHEAD_LIMIT \
                    or self._process is None or not self._process.is_alive():
                return False  # no child yet, or enough queued
            try:
                connection.send_bytes(request)
            except OSError:
                return False  # the call itself finds the child gone and starts another
            self._ahead.append(request)
            return True

    def _answer_ahead(self, request: bytes) -> bytes | None:
        """The answer to ``request`` if it was sent ahead; None when it must be sent now.

        Answers to calls sent ahead before it are dropped. The child answers in order, so
        one that dies before answering this request fails this call (it was drawing it, or
        was about to), and one that dies before answering an earlier request never started
        this one: it then goes to a new child.
        """
        while self._ahead:
            sent = self._ahead.popleft()
            connection = self._connection
            try:
                if connection is None:
                    raise EOFError
                answer = connection.recv_bytes()
            except (EOFError, OSError) as exc:
                message = self._lost(exc)
                if sent == request:
                    raise ModelError(message) from None
                return None
            if sent == request:
                return answer
        return None

    def _pickled(self, method: str, arguments: Mapping[str, Any]) -> bytes:
        """The request as it goes to the child, pickled here: a request that cannot go is
        this call's error, not half sent."""
        import pickle  # here: most runs never draw apart, and pytest does not import it

        try:
            return pickle.dumps((method, dict(arguments)), protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise ModelError(f"the request cannot be sent to the process drawing for "
                             f"{self._name}: {describe_failure(exc)}") from None

    def _sent(self, request: bytes) -> Connection:
        """The connection the request went out on. A child that died since its last answer
        never saw the request, so a new one is started and takes it."""
        try:
            connection = self._started()
            connection.send_bytes(request)
            return connection
        except OSError as exc:
            self._lost(exc)
        connection = self._started()
        try:
            connection.send_bytes(request)
        except OSError as exc:
            raise ModelError(self._lost(exc)) from None
        return connection

    def stop(self) -> None:
        """End the child: asked first, then terminated if it does not go."""
        with self._lock:
            process, connection = self._process, self._connection
            self._process = self._connection = None
            drawing_ahead = bool(self._ahead)
            self._ahead.clear()
        if process is None or connection is None:
            return
        if drawing_ahead:  # drawings nobody will take: it would finish them before stopping
            process.terminate()
        else:
            with contextlib.suppress(OSError):
                connection.send(STOP)
        process.join(JOIN_TIMEOUT_S)
        if process.is_alive():
            process.terminate()
            process.join(JOIN_TIMEOUT_S)
        connection.close()

    def _started(self) -> Connection:
        if self._connection is not None and self._process is not None \
                and self._process.is_alive():
            return self._connection
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        mine, theirs = context.Pipe()
        # Not a daemon, so that the backend may start processes of its own (data loaders);
        # ended at this process's exit instead (see _stop_all).
        process = context.Process(target=serve, args=(theirs, self._factory), daemon=False,
                                  name=f"imagetime-draw {self._name}")
        process.start()
        _register(self)
        theirs.close()
        self._process, self._connection = process, mine
        return mine

    def _lost(self, exc: BaseException) -> str:
        process, connection = self._process, self._connection
        self._process = self._connection = None
        self._ahead.clear()  # their answers will never come
        if connection is not None:
            connection.close()
        code = None
        if process is not None:
            process.join(JOIN_TIMEOUT_S)
            code = process.exitcode
        return (f"the process drawing for {self._name} ended ({_exit_status(code)}) before "
                f"it answered ({type(exc).__name__}); the next drawing starts a new one")


_RUNNING: weakref.WeakSet[DrawingProcess] = weakref.WeakSet()
_EXIT_HANDLER: list[bool] = []  # one entry once registered


def _register(child: DrawingProcess) -> None:
    # Registered after multiprocessing's own exit handler, so it runs first: that one joins
    # every child that is not a daemon, and a drawing child waits for its next request.
    if not _EXIT_HANDLER:
        _EXIT_HANDLER.append(True)
        atexit.register(_stop_all)
    _RUNNING.add(child)


def _stop_all() -> None:
    for child in list(_RUNNING):
        child.stop()


def _exit_status(code: int | None) -> str:
    if code is None:
        return "still running, and no longer answering"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def serve(connection: Connection, factory: Callable[[], Any]) -> None:
    """The child's loop: build the backend on the first request, then answer each one.

    Answers go back from a thread of their own, so the next drawing (sent ahead) starts
    while the parent is still reading the last sheet: a 1024 px sheet is 3 MB through a pipe
    that holds 64 KB, and the parent reads it with an interpreter lock it shares.
    """
    import queue

    # Ctrl-C reaches the whole process group: the parent decides when the child ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers: queue.SimpleQueue[tuple[str, Any] | None] = queue.SimpleQueue()
    sender = threading.Thread(target=_send_answers, args=(connection, answers),
                              name="imagetime-answers", daemon=True)
    sender.start()
    model: Any = None
    while True:
        try:
            message = connection.recv()
        except (EOFError, OSError):
            break  # the parent is gone
        if message is STOP:
            break
        method, arguments = message
        try:
            if model is None:
                model = factory()
            answers.put(("ok", getattr(model, method)(**arguments)))
        except Exception as exc:
            answers.put(("error", describe_failure(exc)))
    answers.put(None)
    sender.join()


def _send_answers(connection: Connection,
                  answers: queue.SimpleQueue[tuple[str, Any] | None]) -> None:
    """Send each answer in order until told to stop (None) or the parent is gone."""
    while (answer := answers.get()) is not None:
        try:
            connection.send(answer)
        except (OSError, ValueError):
            return  # the parent is gone
        except Exception as exc:  # the answer does not pickle
            connection.send(("error", f"the backend's answer cannot be sent back: "
                                      f"{describe_failure(exc)}"))


def factory_of(registry: Any, spec: str, options: ModelOptions) -> Callable[[], Any]:
    """What the child calls to build the backend: the registry's create, picklable."""
    return functools.partial(registry.create, spec, options=options)
