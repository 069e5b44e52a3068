"""The pictures the order probe shows: panels cut from a sheet, two stacked, or four shuffled.

Every panel sits beside a white strip holding its label (``A``/``B`` for a pair, ``1``-``4``
for the shuffled grid), so no label is drawn over the picture itself. Layouts are functions
of the panel size alone, and ``*_boxes`` invert them from the probe's size, so a test can cut
the panels back out of a probe the way a reader's eye would.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from PIL import Image, ImageDraw, ImageFont, ImageStat

from ...sheet.geometry import Box, split

MAX_PANEL_SIDE = 768  # larger panels are scaled down: more pixels add cost, not evidence
WHITE = (255, 255, 255)
INK = (20, 20, 24)


def strip_width(panel_width: int) -> int:
    return max(24, round(panel_width * 0.16))


def gap(panel_height: int) -> int:
    return max(4, round(panel_height * 0.03))


def panels(sheet: Image.Image, cover_corner: float = 0.0) -> tuple[Image.Image, ...]:
    """t1..t4 cut at the nominal 2x2 cells, at one common size.

    ``cover_corner`` > 0 paints that fraction of each panel's top-left corner in the panel's
    median colour: a stage label drawn there would otherwise give the order away.
    """
    cut = split(sheet.convert("RGB"))
    width = min(p.width for p in cut)
    height = min(p.height for p in cut)
    scale = min(1.0, MAX_PANEL_SIDE / max(width, height))
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    out = []
    for panel in cut:
        panel = panel.crop((0, 0, width, height))
        if panel.size != size:
            panel = panel.resize(size, Image.Resampling.LANCZOS)
        if cover_corner > 0:
            panel = _covered(panel, cover_corner)
        out.append(panel)
    return tuple(out)


def _covered(panel: Image.Image, fraction: float) -> Image.Image:
    median = ImageStat.Stat(panel).median
    out = panel.copy()
    ImageDraw.Draw(out).rectangle((0, 0, round(panel.width * fraction),
                                   round(panel.height * fraction)),
                                  fill=(median[0], median[1], median[2]))
    return out


@functools.cache
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _label(draw: ImageDraw.ImageDraw, text: str, strip: Box) -> None:
    font = _font(max(10, round(strip.width * 0.6)))
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    x = strip.left + (strip.width - (right - left)) / 2 - left
    y = strip.top + (strip.height - (bottom - top)) / 2 - top
    draw.text((x, y), text, font=font, fill=INK)


def _cells(size: tuple[int, int], rows: int, cols: int) -> tuple[tuple[Box, Box], ...]:
    """(label strip, panel) boxes, row by row, for panels of ``size``."""
    width, height = size
    strip, g = strip_width(width), gap(height)
    out = []
    for row in range(rows):
        for col in range(cols):
            x = col * (strip + width + g)
            y = row * (height + g)
            out.append((Box(x, y, x + strip, y + height), Box(x + strip, y, x + strip + width,
                                                                y + height)))
    return tuple(out)


def _canvas(size: tuple[int, int], rows: int, cols: int) -> tuple[int, int]:
    width, height = size
    return (cols * (strip_width(width) + width) + (cols - 1) * gap(height),
            rows * height + (rows - 1) * gap(height))


def _compose(pictures: Sequence[Image.Image], labels: Sequence[str], rows: int,
             cols: int) -> Image.Image:
    size = pictures[0].size
    image = Image.new("RGB", _canvas(size, rows, cols), WHITE)
    draw = ImageDraw.Draw(image)
    for picture, text, (strip, box) in zip(pictures, labels, _cells(size, rows, cols),
                                           strict=True):
        image.paste(picture, (box.left, box.top))
        _label(draw, text, strip)
    return image


def pair_image(top: Image.Image, bottom: Image.Image) -> Image.Image:
    """Two panels stacked: ``A`` on top, ``B`` below."""
    return _compose([top, bottom], ["A", "B"], rows=2, cols=1)


def grid_image(cells: Sequence[Image.Image]) -> Image.Image:
    """Four panels in a 2x2 grid labelled 1-4 in reading order."""
    return _compose(cells, ["1", "2", "3", "4"], rows=2, cols=2)


def _panel_size(probe: tuple[int, int], rows: int, cols: int) -> tuple[int, int]:
    """The panel size that lays out to a probe of this size (the layout, inverted)."""
    heights = [h for h in range(1, probe[1] + 1) if _canvas((1, h), rows, cols)[1] == probe[1]]
    for height in heights:
        for width in range(1, probe[0] + 1):
            if _canvas((width, height), rows, cols)[0] == probe[0]:
                return (width, height)
    raise ValueError(f"no {rows}x{cols} probe layout is {probe[0]}x{probe[1]} pixels")


def pair_boxes(probe: tuple[int, int]) -> tuple[Box, Box]:
    """Where panels A and B lie in a pair probe of this size."""
    top, bottom = (box for _, box in _cells(_panel_size(probe, 2, 1), 2, 1))
    return top, bottom


def grid_boxes(probe: tuple[int, int]) -> tuple[Box, ...]:
    """Where panels 1-4 lie in a grid probe of this size."""
    return tuple(box for _, box in _cells(_panel_size(probe, 2, 2), 2, 2))
