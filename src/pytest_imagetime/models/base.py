"""The model side of a run: what a backend is asked for and what it gives back."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ..rubric.facts import Setting

if TYPE_CHECKING:  # annotations only: the options module imports this one at pytest start-up
    from PIL import Image

    from ..cases.model import Case

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


@runtime_checkable
class ImageModel(Protocol):
    """A backend: one square motion sheet per request, single pass, no quality retries."""

    @property
    def name(self) -> str:
        """The spec the user wrote, e.g. ``procedural:copied``; names the run directory."""

    def config(self) -> Mapping[str, JSON]:
        """Everything that changes the output; a change regenerates stored images."""

    def generate(self, *, request: GenerationRequest) -> Generated: ...


@runtime_checkable
class BatchImageModel(ImageModel, Protocol):
    """A backend that renders several requests in one call (``--imagetime-batch-size``)."""

    def generate_batch(self, *, requests: Sequence[GenerationRequest]) -> list[Generated]:
        """One Generated per request, in order; an exception fails every request of it."""
