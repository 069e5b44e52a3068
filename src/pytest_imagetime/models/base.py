"""The model side of a run: what a backend is asked for and what it gives back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from ..cases import Case
from ..rubric import Setting

JSON = Any


class ModelError(Exception):
    """Generation failed for one item (missing file, out of memory, refusal, timeout).

    The item becomes an error with this message; the run goes on.
    """


@dataclass(frozen=True)
class GenerationRequest:
    case: Case
    setting: Setting
    size: int  # the sheet is size x size pixels
    seed: int
    reference: Image.Image | None = None  # the scaffold setting's initial-state image


@dataclass(frozen=True)
class Generated:
    image: Image.Image
    details: Mapping[str, JSON] = field(default_factory=dict)  # backend facts worth recording


@runtime_checkable
class ImageModel(Protocol):
    """A backend: one square motion sheet per request, single pass, no quality retries."""

    @property
    def name(self) -> str:
        """The spec the user wrote, e.g. ``procedural:copied``; names the run directory."""

    def config(self) -> Mapping[str, JSON]:
        """Everything that changes the output; a change regenerates stored images."""

    def generate(self, *, request: GenerationRequest) -> Generated: ...
