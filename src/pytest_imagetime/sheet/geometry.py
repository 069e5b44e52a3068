"""Motion-sheet geometry: where the four panels of a 2x2 sheet lie, composing and splitting.

Panels are read top-left, top-right, bottom-left, bottom-right: t1, t2, t3, t4.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # Pillow is imported at the first sheet composed: collecting never loads it
    from PIL import Image

STAGE_ORDER: tuple[str, ...] = ("t1", "t2", "t3", "t4")
WHITE = (255, 255, 255)


@dataclass(frozen=True)
class Box:
    left: int
    top: int
    right: int
    bottom: int

    @property
    def width(self) -> int:
        return self.right - self.left

    @property
    def height(self) -> int:
        return self.bottom - self.top

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.left, self.top, self.right, self.bottom)


def gutter_width(size: int) -> int:
    """The gutter our renderers draw: thin but visible at any size (>= 2 px)."""
    return max(2, round(size * 0.016))


def panel_boxes(size: int, gutter: int | None = None, margin: int = 0) -> tuple[Box, ...]:
    """The four panel boxes of a square size x size sheet with the given gutter and margin."""
    g = gutter_width(size) if gutter is None else gutter
    inner = size - 2 * margin - g
    first = inner // 2
    second = inner - first
    xs = ((margin, margin + first), (margin + first + g, margin + first + g + second))
    ys = xs
    return tuple(Box(x0, y0, x1, y1) for (y0, y1) in ys for (x0, x1) in xs)


def compose(panels: Sequence[Image.Image], size: int, gutter: int | None = None,
            background: tuple[int, int, int] = WHITE, margin: int = 0) -> Image.Image:
    """Lay four panels out as a square 2x2 sheet, each resized into its cell."""
    if len(panels) != 4:
        raise ValueError(f"a 2x2 sheet needs 4 panels, got {len(panels)}")
    from PIL import Image

    sheet = Image.new("RGB", (size, size), background)
    for panel, box in zip(panels, panel_boxes(size, gutter, margin), strict=True):
        cell = panel.convert("RGB")
        if cell.size != (box.width, box.height):
            cell = cell.resize((box.width, box.height), Image.Resampling.LANCZOS)
        sheet.paste(cell, (box.left, box.top))
    return sheet


def split(sheet: Image.Image, boxes: Sequence[Box] | None = None) -> tuple[Image.Image, ...]:
    """Cut a sheet into its four panels (at the given boxes, or at the nominal 2x2 cells)."""
    if boxes is None:
        w, h = sheet.size
        boxes = (Box(0, 0, w // 2, h // 2), Box(w - w // 2, 0, w, h // 2),
                 Box(0, h - h // 2, w // 2, h), Box(w - w // 2, h - h // 2, w, h))
    return tuple(sheet.crop(b.as_tuple()) for b in boxes)


def scaffold(reference: Image.Image, size: int, gutter: int | None = None,
             fill: tuple[int, int, int] = WHITE) -> Image.Image:
    """The scaffold setting's input: the reference in the top-left cell, the rest empty."""
    from PIL import Image

    blank = Image.new("RGB", (8, 8), fill)
    return compose([reference, blank, blank, blank], size, gutter)
