"""Sheets on disk: a sheet is written, then its generation record (with the sheet's digest
and file facts), and found again only when its record's input key matches and the file is
the one recorded.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic import atomic_write_bytes, atomic_write_json, read_json
from .keys import JSON, sha256_bytes
from .paths import RunPaths

if TYPE_CHECKING:  # Pillow is imported at the first image read: collecting never loads it
    from PIL import Image


def encode_png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    # compress_level 1: PNG stays lossless, and higher levels cost far more CPU than they save.
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


@dataclass(frozen=True)
class StoredSheet:
    """A stored sheet that matches its record: its file, digest and record, and its bytes
    when checking it meant reading them."""

    path: Path
    sha256: str
    record: dict[str, JSON]
    data: bytes | None

    def read(self) -> bytes:
        """The file's bytes; raises ValueError when they are no longer the recorded ones."""
        data = self.path.read_bytes() if self.data is None else self.data
        if self.data is None and sha256_bytes(data) != self.sha256:
            raise ValueError(f"the stored sheet {self.path} changed after it was checked")
        return data


def find_stored_sheet(paths: RunPaths, case_id: str, key: str) -> StoredSheet | None:
    """The stored sheet if its record matches ``key`` and the file is the one recorded, else
    None. A file with the size and modification time recorded when it was written is taken
    as written without being read (as make and git do): a resume of large sheets then reads
    none of them. Any other file is read and its digest checked."""
    record = read_json(paths.image_record(case_id))
    if not isinstance(record, dict) or record.get("input_key") != key:
        return None
    digest = record.get("image_sha256")
    if not isinstance(digest, str):
        return None
    path = paths.image(case_id)
    try:
        if record.get("image_file") == _file_facts(path):
            return StoredSheet(path, digest, record, None)
        data = path.read_bytes()
    except OSError:
        return None
    if sha256_bytes(data) != digest:
        return None
    return StoredSheet(path, digest, record, data)


def _file_facts(path: Path) -> dict[str, int]:
    """What tells a written file from a changed one without reading it."""
    status = path.stat()
    return {"bytes": status.st_size, "mtime_ns": status.st_mtime_ns}


def load_stored_image(paths: RunPaths, case_id: str, key: str) -> tuple[Image.Image, str,
                                                                      dict[str, JSON]] | None:
    """The stored sheet, decoded, if its record matches ``key`` and the file is intact."""
    found = find_stored_sheet(paths, case_id, key)
    if found is None:
        return None
    try:
        return decode_png(found.read()), found.sha256, found.record
    except (OSError, ValueError):
        return None


def decode_png(data: bytes) -> Image.Image:
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def rgb_png(data: bytes | None) -> bool:
    """Whether ``data`` is an 8-bit RGB PNG: such a file is stored as delivered, since
    decoding and encoding it again would give the same pixels at a cost."""
    if data is None or not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return False
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as opened:
            return opened.format == "PNG" and opened.mode == "RGB"
    except (OSError, ValueError):
        return False


def store_image(paths: RunPaths, case_id: str, image: Image.Image,
                record: dict[str, JSON], data: bytes | None = None) -> str:
    """Write the sheet, then its record; ``data``, when given, is the sheet already encoded
    as an RGB PNG (a backend's or a file's own bytes) and is written as is."""
    if data is None:
        data = encode_png(image)
    digest = sha256_bytes(data)
    path = paths.image(case_id)
    atomic_write_bytes(path, data)
    atomic_write_json(paths.image_record(case_id),
                      {**record, "image_sha256": digest, "image_file": _file_facts(path)})
    return digest
