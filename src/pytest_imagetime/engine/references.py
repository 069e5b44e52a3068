"""The scaffold setting's reference images: one initial-state image per case.

Either read from a directory (``--imagetime-reference-dir``: ``<case id>.png`` and the like)
or generated once per case by a chosen model (``--imagetime-reference-model``) and stored
under ``<out>/_references/<model>/``, so that every model of the run, every worker and every
later session completes the same reference.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..cases.model import Case
from ..models.base import GenerationRequest, ImageModel
from ..sheet.prompts import reference_prompt
from ..store.file_lock import exclusive
from ..store.keys import input_key, sha256_bytes
from ..store.paths import RunPaths
from ..store.sheets import load_stored_image, store_image

if TYPE_CHECKING:  # Pillow is imported at the first reference read
    from PIL import Image

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
REFERENCE_FORMAT = "imagetime-reference/1"


class ReferenceError(Exception):
    """No reference for a case: the item is an error with this reason."""


@dataclass(frozen=True)
class Reference:
    image: Image.Image
    sha256: str  # of the file's bytes: a changed reference regenerates and re-judges
    source: str


class References(Protocol):
    def describe(self) -> Mapping[str, Any]:
        """Where references come from, for the run's manifest."""

    def get(self, case: Case) -> Reference: ...


@dataclass(frozen=True)
class ReferenceDir:
    directory: Path

    def describe(self) -> Mapping[str, Any]:
        return {"source": "directory", "directory": str(self.directory)}

    def get(self, case: Case) -> Reference:
        for suffix in IMAGE_SUFFIXES:
            path = self.directory / f"{case.id}{suffix}"
            if path.is_file():
                return _read(path)
        raise ReferenceError(f"no reference image for case {case.id!r}: expected "
                             f"{self.directory / (case.id + '.png')} (or "
                             f"{', '.join(IMAGE_SUFFIXES[1:])}) for --imagetime-reference-dir")


def _read(path: Path) -> Reference:
    from PIL import Image

    try:
        data = path.read_bytes()
        with Image.open(io.BytesIO(data)) as opened:
            image = opened.convert("RGB")
    except OSError as exc:  # Pillow's UnidentifiedImageError among them
        raise ReferenceError(f"cannot read the reference {path}: {exc}") from None
    return Reference(image, sha256_bytes(data), str(path))


@dataclass(frozen=True)
class GeneratedReferences:
    """References drawn by ``model`` at ``size`` from each case's initial state."""

    model: ImageModel
    out: Path
    size: int
    seed_of: Any  # (case id) -> seed, the run's case seeds

    @property
    def paths(self) -> RunPaths:
        return RunPaths(self.out / "_references", self.model.name, "-", "prompt-only")

    def describe(self) -> Mapping[str, Any]:
        return {"source": "model", "model": self.model.name,
                "config": dict(self.model.config()), "directory": str(self.paths.model_dir)}

    def get(self, case: Case) -> Reference:
        request = GenerationRequest(case=case, setting="prompt-only", size=self.size,
                                    seed=self.seed_of(case.id), prompt=reference_prompt(case),
                                    kind="reference")
        key = input_key({"model": self.model.name, "config": dict(self.model.config()),
                         "case": case.id, "prompt": request.text, "size": self.size,
                         "seed": request.seed, "kind": "reference"})
        paths = self.paths
        # One process at a time draws a case's reference; the others then read it.
        with exclusive(paths.model_dir / ".locks" / f"{case.id}.lock"):
            stored = load_stored_image(paths, case.id, key)
            if stored is not None:
                return Reference(stored[0].convert("RGB"), stored[1],
                                 str(paths.image(case.id)))
            try:
                generated = self.model.generate(request=request)
            except Exception as exc:
                raise ReferenceError(f"the reference model {self.model.name} failed on "
                                     f"{case.id}: {exc}") from exc
            image = generated.image.convert("RGB")
            digest = store_image(paths, case.id, image, {
                "format": REFERENCE_FORMAT, "input_key": key, "model": self.model.name,
                "case_id": case.id, "prompt": request.text, "size": self.size,
                "seed": request.seed, "details": dict(generated.details)})
        return Reference(image, digest, str(paths.image(case.id)))

