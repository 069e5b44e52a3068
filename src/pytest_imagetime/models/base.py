"""The model side of a run: what a backend is asked for and what it gives back, the base class
that declares what every backend must implement and each optional feature with its default,
and the adapter that gives a third-party backend that does not inherit those defaults."""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..backends.registry import check_required
from ..rubric.facts import Setting

if TYPE_CHECKING:  # annotations only: the options module imports this one at pytest start-up
    from PIL import Image

    from ..cases.loading import Case

JSON = Any


class ModelError(Exception):
    """Generation failed for one item (missing file, out of memory, refusal, timeout).

    The item becomes an error with this message; the run goes on.
    """


def describe_failure(exc: BaseException,
                     own_words: tuple[type[BaseException], ...] = (ModelError,)) -> str:
    """An exception as an item's error text: the message of the kinds that word their own,
    else its type, message and the line that raised it."""
    if isinstance(exc, own_words):
        return str(exc)
    import traceback
    from pathlib import Path

    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" (at {Path(last[0].filename).name}:{last[0].lineno})" if last else ""
    return f"{type(exc).__name__}: {exc}{where}"


@dataclass(frozen=True)
class GenerationRequest:
    case: Case
    setting: Setting
    size: int  # the image is size x size pixels
    seed: int
    reference: Image.Image | None = None  # the scaffold setting's initial-state image
    prompt: str | None = None  # None: the case's own prompt
    kind: Literal["sheet", "reference"] = "sheet"  # a reference is one image of the t1 state
    grid: tuple[int, int] = (2, 2)  # rows x panels a row; 4xN dense grids are qualitative
    # Scaffold setting: a size x size canvas with the reference in the top-left cell and the
    # other cells empty; edit-capable backends complete it.
    scaffold: Image.Image | None = None

    @property
    def text(self) -> str:
        """The prompt the backend renders."""
        return self.case.prompt if self.prompt is None else self.prompt


@dataclass(frozen=True)
class Generated:
    image: Image.Image
    details: Mapping[str, JSON] = field(default_factory=dict)  # backend facts worth recording
    # The image as the backend delivered it (a file, an API's PNG): stored byte for byte when
    # it is an RGB PNG, so nothing is encoded twice and its digest is the source's.
    data: bytes | None = None
    # Pixel facts already measured on exactly these bytes (an earlier run's record of a file
    # the files model reads); used when their metrics version is current, else measured.
    facts: Mapping[str, JSON] | None = None


@dataclass(frozen=True)
class ModelOptions:
    """Settings a model factory may take as ``options=`` (the ``--imagetime-model-*`` options
    and ``--imagetime-devices`` / ``--imagetime-batch-size``)."""

    devices: tuple[str, ...] | None = None  # --imagetime-devices; None: auto
    worker_index: int = 0  # this process's xdist worker number (gwN), 0 outside xdist
    batch_size: int = 1  # sheets per call, for backends that batch
    base_url: str | None = None  # hosted backends: an OpenAI-compatible endpoint
    key_env: str | None = "OPENAI_API_KEY"  # None: the endpoint needs no key
    timeout_s: float = 300.0
    retries: int = 2  # transport retries (429, 5xx, timeouts); never retries for quality
    concurrency: int = 4  # hosted backends: requests in flight at once per pytest process
    headers: Mapping[str, str] = field(default_factory=dict)  # hosted backends: extra headers
    # --imagetime-model-process: draw in a child process (auto: backends that draw on a GPU)
    process: str = "auto"
    # False in a session that makes no calls (--collect-only, --imagetime-dry-run, ...): a
    # hosted backend then needs neither its package nor its key.
    calls: bool = True
    # The folder a relative path in a spec's argument (files:DIR, replay:DIR) is relative to:
    # the ini file's when the spec came from it; None: the working directory.
    spec_dir: Path | None = None

    def device(self) -> str | None:
        """This process's torch device ("cuda:1", "cpu"); None: the backend's default. Asks
        torch only when called, so runs without a torch backend never import it."""
        from .devices import assign_device

        return assign_device(self.devices, self.worker_index)


class ImageModel(abc.ABC):
    """A backend: one square motion sheet per request, single pass, no quality retries.

    A backend implements ``name``, ``config`` and ``generate``, and overrides the optional
    features below that it supports; each has the default that suits a backend without it.
    A third-party backend that does not inherit from this class is wrapped by ``adapt_model``.
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The spec the user wrote, e.g. ``procedural:copied``; names the run directory."""

    @abc.abstractmethod
    def config(self) -> Mapping[str, JSON]:
        """Everything that changes the output; a change regenerates stored images."""

    @abc.abstractmethod
    def generate(self, *, request: GenerationRequest) -> Generated:
        """One sheet (or reference image) for the request; ModelError when it cannot."""

    # ------------------------------------------------------------ optional features

    @property
    def concurrency(self) -> int:
        """Requests the run may have in flight at once; above 1 only where generate is
        thread-safe (hosted APIs)."""
        return 1

    @property
    def cpu_bound(self) -> bool:
        """Draws on this machine's CPU in this process: sheets are stored and measured
        between drawings rather than on a thread beside them."""
        return False

    @property
    def accepts_reference(self) -> bool:
        """Completes a scaffold (takes a reference image): the scaffold setting needs it."""
        return False

    @property
    def supports_batch(self) -> bool:
        """``generate_batch`` renders several requests in one call (``--imagetime-batch-size``)."""
        return False

    def generate_batch(self, *, requests: Sequence[GenerationRequest]) -> list[Generated]:
        """One Generated per request, in order; an exception fails every request of it."""
        return [self.generate(request=request) for request in requests]

    @property
    def may_draw_on_gpu(self) -> bool:
        """The backend can draw on a GPU: ``--imagetime-model-process=auto`` then draws in a
        child process, where ``draws_on_gpu`` is asked at the first drawing."""
        return False

    @property
    def draws_on_gpu(self) -> bool:
        """Whether it does draw on a GPU; asked only at the first drawing (may import torch)."""
        return False

    @property
    def in_own_process(self) -> bool:
        """Drawings are made in a process of its own (``models/own_process.py``)."""
        return False

    def draw_ahead(self, *, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> bool:
        """Queue the calls that come next where drawing happens elsewhere; whether every one
        is queued. A backend that draws here queues nothing."""
        return False

    def input_token(self, *, request: GenerationRequest) -> str | None:
        """What else decides this request's sheet (a file's digest); None: nothing."""
        return None

    def check_selection(self, *, case_ids: Sequence[str]) -> None:
        """ValueError when the backend can make none of the selected cases."""
        return

    def close(self) -> None:
        """Release what the backend holds (child processes) at the end of the session."""
        return


REQUIRED_MODEL_METHODS = ("name", "config", "generate")


class PluginModel(ImageModel):
    """A third-party backend that does not inherit from ImageModel: its optional features are
    read here, once for every caller, with the base class's defaults where it has none."""

    def __init__(self, backend: Any) -> None:
        self.wrapped = backend

    @property
    def name(self) -> str:
        return str(self.wrapped.name)

    def config(self) -> Mapping[str, JSON]:
        config: Mapping[str, JSON] = self.wrapped.config()
        return config

    def generate(self, *, request: GenerationRequest) -> Generated:
        generated: Generated = self.wrapped.generate(request=request)
        return generated

    def _feature(self, name: str, default: Any) -> Any:
        return getattr(self.wrapped, name, default)

    @property
    def concurrency(self) -> int:
        return max(1, int(self._feature("concurrency", 1) or 1))

    @property
    def cpu_bound(self) -> bool:
        return bool(self._feature("cpu_bound", False))

    @property
    def accepts_reference(self) -> bool:
        return bool(self._feature("accepts_reference", False))

    @property
    def supports_batch(self) -> bool:
        return callable(self._feature("generate_batch", None))

    def generate_batch(self, *, requests: Sequence[GenerationRequest]) -> list[Generated]:
        if not self.supports_batch:
            return super().generate_batch(requests=requests)
        generated: list[Generated] = self.wrapped.generate_batch(requests=requests)
        return generated

    @property
    def may_draw_on_gpu(self) -> bool:
        # Declared by its type: the answer itself may need torch, so it waits for a drawing.
        return hasattr(type(self.wrapped), "draws_on_gpu")

    @property
    def draws_on_gpu(self) -> bool:
        return bool(self._feature("draws_on_gpu", False))

    def input_token(self, *, request: GenerationRequest) -> str | None:
        token_of = self._feature("input_token", None)
        return token_of(request) if callable(token_of) else None

    def check_selection(self, *, case_ids: Sequence[str]) -> None:
        check = self._feature("check_selection", None)
        if callable(check):
            check(case_ids)

    def close(self) -> None:
        close = self._feature("close", None)
        if callable(close):
            close()

    def __getattr__(self, name: str) -> Any:
        # Attributes of its own (a directory, settings) stay reachable through the wrapper.
        if "wrapped" not in self.__dict__:  # being copied or unpickled: not built yet
            raise AttributeError(name)
        return getattr(self.__dict__["wrapped"], name)


def adapt_model(backend: object, name: str) -> ImageModel:
    """``backend`` as an ImageModel: itself when it inherits, else wrapped; IncompleteBackend
    naming the backend and what it lacks when it cannot draw at all."""
    if isinstance(backend, ImageModel):
        return backend
    check_required(backend, name, "model", REQUIRED_MODEL_METHODS,
                   "pytest_imagetime.models.base.ImageModel")
    return PluginModel(backend)
