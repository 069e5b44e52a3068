"""The stored images of TempViz runs: ``<out>/<model>/tempviz/images/<Category>-<index>.png``
with the generation record beside each, found from an output, model or suite directory."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ...store.atomic import read_json
from ...tempviz.names import CATEGORIES


@dataclass(frozen=True)
class TempvizImage:
    model: str  # the image model as the suite's answers.csv names it
    category: str
    index: str
    path: Path

    @property
    def id(self) -> str:
        return f"{self.category}-{self.index}"


def _image_dirs(path: Path) -> list[Path]:
    for pattern in ("images", "tempviz/images", "*/tempviz/images"):
        found = sorted(p for p in path.glob(pattern) if p.is_dir())
        if found:
            return found
    return []


def find_images(paths: Sequence[str]) -> list[TempvizImage]:
    """Every TempViz image under ``paths``; ValueError for a path without any."""
    images: dict[tuple[str, str], TempvizImage] = {}
    for raw in paths:
        folders = _image_dirs(Path(raw))
        if not folders:
            raise ValueError(f"{raw}: no TempViz images (<model>/tempviz/images/*.png)")
        for folder in folders:
            for png in sorted(folder.glob("*.png")):
                category, dash, index = png.stem.rpartition("-")
                if not dash or category not in CATEGORIES:
                    continue
                record = read_json(png.with_suffix(".json"))
                model = record.get("model") if isinstance(record, dict) else None
                name = model if isinstance(model, str) else folder.parent.parent.name
                images.setdefault((name, png.stem), TempvizImage(name, category, index, png))
    return list(images.values())
