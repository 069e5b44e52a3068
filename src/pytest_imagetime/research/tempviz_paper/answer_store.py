"""The answer store of ``imagetime tempviz judge``, ``vqa-questions`` and ``vqa-answer``: one
JSON file per answer, named by the input key of everything that decides it, written
atomically as soon as the answer arrives. A missing, damaged or other-key file is no answer
(it is asked again); a failed call is never stored. Also the stored images' digests, which
the keys of image answers hold.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from PIL import Image

from ... import __version__
from ...judges.vlm import png_data_url
from ...rubric.judgment import JudgeError
from ...store.atomic import atomic_write_json, read_json
from ...store.keys import input_key, sha256_bytes

ANSWER_FORMAT = "imagetime-tempviz-paper-answer/1"


@dataclass(frozen=True)
class Stored:
    """An answer read from the store, with what asking it cost (None: unknown price)."""

    value: Any
    cost_usd: float | None


@dataclass(frozen=True)
class Slot:
    """Where one answer is kept (``path`` None: no store) and the key it must carry."""

    path: Path | None
    key: str

    def stored(self, usable: Callable[[Any], bool]) -> Stored | None:
        """The stored answer of this very key; None when missing, damaged or unusable."""
        if self.path is None:
            return None
        record = read_json(self.path)
        if not isinstance(record, dict) or record.get("key") != self.key \
                or record.get("format") != ANSWER_FORMAT or not usable(record.get("value")):
            return None
        cost = record.get("cost_usd")
        if not isinstance(cost, int | float) or isinstance(cost, bool):
            return Stored(record["value"], None)
        return Stored(record["value"], float(cost))

    def keep(self, value: Any, content: str, cost_usd: float | None,
             about: Mapping[str, Any]) -> None:
        """Write the answer; OSError when it cannot be written."""
        if self.path is None:
            return
        atomic_write_json(self.path, {
            "format": ANSWER_FORMAT, "key": self.key, **about, "value": value,
            "content": content, "cost_usd": cost_usd, "plugin_version": __version__,
            "date": datetime.now(timezone.utc).isoformat(timespec="seconds")})


@dataclass(frozen=True)
class AnswerStore:
    """One folder for every answer (``--store DIR``), or a folder named ``beside`` next to
    each image's ``images/`` folder; ``enabled`` False (``--no-store``) reads and writes
    nothing."""

    folder: Path | None
    beside: str = ""
    enabled: bool = True

    def slot(self, parts: Mapping[str, Any], image: Path | None = None) -> Slot:
        key = input_key({"format": ANSWER_FORMAT, **parts})
        if not self.enabled:
            return Slot(None, key)
        if self.folder is not None:
            return Slot(self.folder / f"{key}.json", key)
        if image is None:
            raise ValueError("an answer that no image decides needs a store folder")
        return Slot(image.parent.parent / self.beside / f"{key}.json", key)


def image_digest(path: Path) -> str:
    """The sha256 of the image file's bytes; OSError when it cannot be read."""
    return sha256_bytes(path.read_bytes())


def image_url(path: Path, digest: str) -> str:
    """The image as a data URL, from the very bytes its answers are keyed on; JudgeError when
    the file changed since, OSError when it is unreadable or no image."""
    data = path.read_bytes()
    if sha256_bytes(data) != digest:
        raise JudgeError(f"{path} changed while it was asked about")
    with Image.open(io.BytesIO(data)) as picture:
        return png_data_url(picture, data)
