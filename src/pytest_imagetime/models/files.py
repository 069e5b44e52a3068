"""Model ``files:DIR``: judge sheets generated elsewhere, one image file per case id."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PIL import Image, UnidentifiedImageError

from .base import Generated, GenerationRequest, ModelError

SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


class FilesModel:
    """Reads ``DIR/<case id>.png`` (or .jpg, .jpeg, .webp) instead of generating."""

    # Sheets made elsewhere may have completed a scaffold: the judge then scores C1 against
    # the run's reference.
    accepts_reference = True

    def __init__(self, argument: str | None = None) -> None:
        if not argument:
            raise ValueError("the files model needs a directory: --imagetime-model=files:DIR")
        self.directory = Path(argument).expanduser()
        if not self.directory.is_dir():
            raise ValueError(f"files model: {str(self.directory)!r} is not a directory")
        self._spec = f"files:{argument}"

    @property
    def name(self) -> str:
        return self._spec

    def config(self) -> Mapping[str, Any]:
        return {"backend": "files", "directory": str(self.directory.resolve())}

    def find(self, case_id: str) -> Path | None:
        for suffix in SUFFIXES:
            path = self.directory / f"{case_id}{suffix}"
            if path.is_file():
                return path
        return None

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
            with Image.open(io.BytesIO(data)) as opened:
                image = opened.convert("RGB")
        except (OSError, UnidentifiedImageError) as exc:
            raise ModelError(f"cannot read {path}: {exc}") from None
        stat = path.stat()
        # The file's own bytes go to the store: an RGB PNG is kept as it is, not re-encoded.
        return Generated(image, {"source": str(path), "source_size": stat.st_size,
                                 "source_mtime_ns": stat.st_mtime_ns}, data=data)
