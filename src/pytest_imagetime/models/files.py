"""Model ``files:DIR``: judge sheets generated elsewhere, one image file per case id."""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from ..backends.registry import spec_path
from ..store.keys import sha256_bytes
from .base import Generated, GenerationRequest, ModelError, ModelOptions

SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


class FilesModel:
    """Reads ``DIR/<case id>.png`` (or .jpg, .jpeg, .webp) instead of generating."""

    # Sheets made elsewhere may have completed a scaffold: the judge then scores C1 against
    # the run's reference.
    accepts_reference = True

    def __init__(self, argument: str | None = None, *,
                 options: ModelOptions | None = None) -> None:
        if not argument:
            raise ValueError("the files model needs a directory: --imagetime-model=files:DIR")
        self.directory = spec_path(argument, options.spec_dir if options else None)
        if not self.directory.is_dir():
            raise ValueError(f"files model: {str(self.directory)!r} is not a directory")
        self._spec = f"files:{argument}"

    @property
    def name(self) -> str:
        return self._spec

    def config(self) -> Mapping[str, Any]:
        return {"backend": "files", "directory": self._resolved}

    @functools.cached_property
    def _resolved(self) -> str:  # config() is asked for on every item
        return str(self.directory.resolve())

    def find(self, case_id: str) -> Path | None:
        for suffix in SUFFIXES:
            path = self.directory / f"{case_id}{suffix}"
            if path.is_file():
                return path
        return None

    def check_selection(self, case_ids: Sequence[str]) -> None:
        """Raise ValueError when not one of the selected cases has a file: a wrong folder or
        a naming scheme of its own, found before the run rather than as an error per item."""
        if not case_ids or any(self.find(case_id) is not None for case_id in case_ids):
            return
        present = sorted(p.name for p in self.directory.iterdir()
                         if p.suffix.lower() in SUFFIXES and p.is_file())
        holds = (f"it holds {len(present)} image files, such as {', '.join(present[:3])}"
                 if present else f"it holds no {'/'.join(SUFFIXES)} file")
        raise ValueError(
            f"none of the {len(case_ids)} selected cases has an image in {self.directory} "
            f"(expected <case id>.png, .jpg, .jpeg or .webp, such as "
            f"{self.directory / case_ids[0]}.png); {holds}")

    def input_token(self, request: GenerationRequest) -> str | None:
        """Identifies the file behind a case, so replacing it re-reads and re-judges."""
        path = self.find(request.case.id)
        if path is None:
            return None
        stat = path.stat()
        return f"{path.name}:{stat.st_size}:{stat.st_mtime_ns}"

    def generate(self, *, request: GenerationRequest) -> Generated:
        path = self.find(request.case.id)
        if path is None:
            expected = self.directory / f"{request.case.id}.png"
            raise ModelError(f"no image for case {request.case.id!r}: expected {expected} "
                             f"(or {', '.join(SUFFIXES[1:])})")
        try:
            data = path.read_bytes()
            image = _open_rgb(data)
        except UnidentifiedImageError:  # its text names a buffer's address, not the file
            raise ModelError(f"cannot read {path}: not an image Pillow can identify") from None
        except (OSError, SyntaxError) as exc:
            raise ModelError(f"cannot read {path}: {exc}") from None
        stat = path.stat()
        # The file's own bytes go to the store: an RGB PNG is kept as it is, not re-encoded.
        return Generated(image, {"source": str(path), "source_size": stat.st_size,
                                 "source_mtime_ns": stat.st_mtime_ns}, data=data,
                         facts=recorded_facts(path, data))


def _open_rgb(data: bytes) -> Image.Image:
    """The file as an RGB image. An RGB PNG is checked (chunk CRCs) but decoded only when its
    pixels are first needed: a sheet whose pixel facts and judgment are already known never is."""
    with Image.open(io.BytesIO(data)) as opened:
        if opened.format != "PNG" or opened.mode != "RGB":
            return opened.convert("RGB")
        opened.verify()
    return Image.open(io.BytesIO(data))


def recorded_facts(path: Path, data: bytes) -> Mapping[str, Any] | None:
    """The pixel facts an earlier run recorded beside this very file (``<case>.json`` in its
    images directory, as ``files:reports/MODEL/images`` reads), when the record's digest is
    this file's: the same bytes have the same facts."""
    try:
        record = json.loads(path.with_suffix(".json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("image_sha256") != sha256_bytes(data):
        return None
    facts = record.get("pixel_metrics")
    return facts if isinstance(facts, dict) else None
