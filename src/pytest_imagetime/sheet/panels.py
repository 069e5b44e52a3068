"""Per-panel measures: each panel rendered once from its sub-pixel box of the sheet, and the
thumbnails, histogram, contrast and detail that the comparisons between panels read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PIL import Image

from .filters import (
    Array,
    Sums,
    box_blur,
    box_sums,
    grey_std,
    laplacian_variance,
    square_thumbnail,
    thumbnail_stack,
)
from .grid import Region

READ_SIZE = 128  # contrast and detail are measured on a 128x128 grey copy
DISTANCE_SIZE = 16  # panels compared as blurred 16x16 thumbnails (order survives small moves)
MOTION_SIZE = 48  # RGB thumbnails that follow the subject's trajectory
HIST_BINS = 6  # joint RGB histogram: 6 levels per channel
HIST_SIZE = 64  # of a 64x64 copy
NCC_SIZE = 40  # continuity: 40x40 grey thumbnails


@dataclass(frozen=True)
class Panel:
    """The small renderings of one panel that the comparisons use."""

    colour: Array  # blurred RGB thumbnail: distances and order
    motion: Array  # RGB thumbnail: the subject's trajectory
    detail: Sums  # blurred grey thumbnail (exact integer 3x3 sums): copy test
    layout: Array  # grey thumbnail: shifted correlation
    histogram: Array  # joint RGB histogram: anchors
    contrast: float  # grey-level std
    detail_ratio: float  # Laplacian variance / contrast^2: fine detail, whatever the contrast


def read_panels(sheet: Image.Image, boxes: list[Region]) -> list[Panel]:
    """Render each panel at its box of ``sheet`` once at READ_SIZE, the rest from that.

    The READ_SIZE grey copy stays 8-bit: its statistics are exact integer sums, so they need
    no float copies (on arrays this small, fresh memory and numpy calls, not arithmetic, set
    the cost). The small thumbnails of all panels are processed together.
    """
    images = [render(sheet, box) for box in boxes]
    greys = [image.convert("L") for image in images]
    colour = box_blur(thumbnail_stack(images, DISTANCE_SIZE))
    layout = thumbnail_stack(greys, NCC_SIZE).astype(np.float32)
    panels = []
    for k, (image, grey) in enumerate(zip(images, greys, strict=True)):
        levels = np.asarray(grey)  # READ_SIZE, 8-bit
        contrast = grey_std(levels)
        motion: Array = np.divide(np.asarray(square_thumbnail(image, MOTION_SIZE)), 255.0)
        panels.append(Panel(colour=colour[k], motion=motion,
                            detail=box_sums(levels), layout=layout[k],
                            histogram=_colour_histogram(image), contrast=contrast,
                            detail_ratio=laplacian_variance(levels) / (contrast ** 2 + 1e-6)))
    return panels


def render(sheet: Image.Image, box: Region) -> Image.Image:
    enlarging = min(box[2] - box[0], box[3] - box[1]) < READ_SIZE
    method = Image.Resampling.BILINEAR if enlarging else Image.Resampling.BOX
    return sheet.resize((READ_SIZE, READ_SIZE), method, box=box)


# The histogram bin of each 8-bit value, from its float in [0, 1] as everywhere else, per
# channel already weighted for the joint index (red * 36 + green * 6 + blue).
_LEVELS = np.clip((np.arange(256) / 255.0 * HIST_BINS).astype(np.int64), 0, HIST_BINS - 1)
_BIN_PARTS = [(_LEVELS * HIST_BINS ** (2 - c)).astype(np.uint16) for c in range(3)]


def _colour_histogram(image: Image.Image) -> Array:
    """Joint RGB histogram of a HIST_SIZE copy of the image, as shares of its pixels."""
    pixels = np.asarray(square_thumbnail(image, HIST_SIZE))
    index = sum(np.take(part, pixels[..., c]) for c, part in enumerate(_BIN_PARTS))
    counts = np.bincount(np.ravel(index), minlength=HIST_BINS ** 3)
    shares: Array = counts / counts.sum()
    return shares
