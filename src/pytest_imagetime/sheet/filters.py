"""The image filters the pixel metrics read through: any image as 8-bit RGB, the lines of an
axis as 8-bit planes, square thumbnails, 3x3 box blurs and sums, grey-level statistics and
medians.

Sums of 8-bit levels run on exact integers where floats would only add rounding, and
temporaries stay small; results match the float formulas up to rounding.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image

Array = NDArray[np.floating[Any]]
Planes = NDArray[np.uint8]  # (channel, line, position along the line), 8-bit
Floats = NDArray[np.float32]
Sums = NDArray[np.int16]  # 3x3 sums of 8-bit grey levels (at most 9 * 255)

# Working resolutions. The separator search keeps up to 1024 lines across an axis (a 2 px
# gutter of a 1024 px sheet stays one clean line) and averages each line down to 256
# positions along it.
LINE_MAX = 1024
LINE_POSITIONS = 256
MIN_SIDE = 8  # smaller inputs are enlarged so every step has pixels to work on


def enlarged(rgb: Image.Image) -> Image.Image:
    """Tiny inputs enlarged to at least MIN_SIDE a side, so every step has pixels to use."""
    w, h = rgb.size
    if min(w, h) >= MIN_SIDE:
        return rgb
    return rgb.resize((max(w, MIN_SIDE), max(h, MIN_SIDE)), Image.Resampling.NEAREST)


def as_rgb(image: Image.Image) -> Image.Image:
    """Any mode as 8-bit RGB; transparent pixels are shown on white."""
    if image.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        return _scaled_grey(image).convert("RGB")
    has_alpha = image.mode in ("RGBA", "LA", "PA", "RGBa", "La") or (
        image.mode == "P" and "transparency" in image.info)
    if has_alpha:
        rgba = image.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        return Image.alpha_composite(white, rgba).convert("RGB")
    if image.mode == "RGB":
        return image  # nothing below writes to it, so a copy would only cost time
    return image.convert("RGB")


def _scaled_grey(image: Image.Image) -> Image.Image:
    """16-bit and float images to 8-bit grey, scaled by their evident range."""
    values = np.asarray(image, dtype=np.float64)
    peak = float(values.max(initial=0.0))
    top = 1.0 if peak <= 1.0 else (255.0 if peak <= 255.0 else 65535.0)
    return Image.fromarray(np.clip(values / top * 255.0, 0, 255).astype(np.uint8))


def line_planes(rgb: Image.Image, across_rows: bool) -> Planes:
    """Lines at full resolution (up to LINE_MAX), each averaged to LINE_POSITIONS positions.

    ``across_rows``: the lines are the image rows (for horizontal separators); otherwise the
    columns. Averaging along a line keeps a flat line exactly flat. The lines stay 8-bit:
    each measure converts only what it reads (see unit).
    """
    w, h = rgb.size
    lines, along = (h, w) if across_rows else (w, h)
    n_lines = max(MIN_SIDE, min(lines, LINE_MAX))
    n_along = max(MIN_SIDE, min(along, LINE_POSITIONS))
    size = (n_along, n_lines) if across_rows else (n_lines, n_along)
    small = rgb.resize(size, Image.Resampling.BOX) if size != rgb.size else rgb
    if not across_rows:
        small = small.transpose(Image.Transpose.TRANSPOSE)  # columns become rows
    # A contiguous plane per channel: PIL splits and transposes faster than numpy copies.
    planes: Planes = np.stack([np.asarray(band) for band in small.split()])
    return planes


def unit(values: Planes, out: Floats | None = None) -> Floats:
    """8-bit values as float32 in [0, 1], the numbers every line measure works on."""
    result: Floats = np.divide(values, np.float32(255.0), out=out, dtype=np.float32)
    return result


def smoothed(lines: Floats) -> Floats:
    """3-position box smoothing along each line (against JPEG ringing)."""
    smooth: Floats = lines[..., :-2] + lines[..., 1:-1]
    smooth += lines[..., 2:]
    smooth /= np.float32(3)
    return smooth


def row_medians(values: NDArray[Any]) -> NDArray[Any]:
    """np.median(values, axis=1), the same numbers: a full sort of short rows is quicker."""
    ordered = np.sort(values, axis=1)
    half = values.shape[1] // 2
    if values.shape[1] % 2:
        return ordered[:, half]
    middle: NDArray[Any] = (ordered[:, half - 1] + ordered[:, half]) / 2
    return middle


def square_thumbnail(image: Image.Image, size: int) -> Image.Image:
    """size x size area-averaged copy."""
    if image.size == (size, size):
        return image
    return image.resize((size, size), Image.Resampling.BOX)


def thumbnail_stack(images: list[Image.Image], size: int) -> Array:
    """size x size area-averaged copies as floats in [0, 1], stacked on a first axis."""
    pixels = np.stack([np.asarray(square_thumbnail(image, size)) for image in images])
    result: Array = np.divide(pixels, 255.0)
    return result


def _edge_padded(values: NDArray[Any], dtype: type[np.generic]) -> NDArray[Any]:
    """Axes 1 and 2 padded by one, edges replicated (np.pad costs more on small arrays)."""
    h, w = values.shape[1:3]
    padded = np.empty((values.shape[0], h + 2, w + 2, *values.shape[3:]), dtype=dtype)
    padded[:, 1:-1, 1:-1] = values
    padded[:, 0, 1:-1] = values[:, 0]
    padded[:, -1, 1:-1] = values[:, -1]
    padded[:, :, 0] = padded[:, :, 1]
    padded[:, :, -1] = padded[:, :, -2]
    return padded


def box_blur(stack: Array) -> Array:
    """3x3 box blur of each image of a stack (over axes 1 and 2), edges replicated."""
    h, w = stack.shape[1:3]
    p = _edge_padded(stack, np.float64)
    total = p[:, :h, :w] + p[:, :h, 1:w + 1]
    for dy, dx in ((0, 2), (1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)):
        total += p[:, dy:dy + h, dx:dx + w]  # the order of the sum of the 3x3 neighbourhood
    result: Array = total / 9.0
    return result


def box_sums(grey: NDArray[np.uint8]) -> Sums:
    """3x3 sums of an 8-bit image, edges replicated: its 3x3 box blur times 9 * 255, exact
    (so the sums can run over columns, then rows)."""
    p = _edge_padded(grey[None], np.int16)[0]
    columns = p[:-2] + p[1:-1] + p[2:]
    total: Sums = columns[:, :-2] + columns[:, 1:-1] + columns[:, 2:]
    return total


def grey_std(grey: NDArray[np.uint8]) -> float:
    """Standard deviation of the grey levels as floats in [0, 1], from exact integer sums."""
    return math.sqrt(_squared_spread(grey.ravel())) / (grey.size * 255)


def laplacian_variance(grey: NDArray[np.uint8]) -> float:
    """Variance of the 4-neighbour Laplacian of the grey levels (floats in [0, 1]), exact."""
    g = grey.astype(np.int16)  # the Laplacian lies within +-4 * 255
    lap = 4 * g[1:-1, 1:-1] - g[:-2, 1:-1] - g[2:, 1:-1] - g[1:-1, :-2] - g[1:-1, 2:]
    return _squared_spread(lap.ravel()) / (lap.size ** 2 * 255.0 * 255.0)


def _squared_spread(values: NDArray[np.integer[Any]]) -> int:
    """n^2 times the variance of n integers, exactly: n * sum(v^2) - sum(v)^2."""
    squares = int(np.einsum("i,i->", values, values, dtype=np.int64))
    return values.size * squares - int(values.sum(dtype=np.int64)) ** 2


def channel_sum(rgb: Array) -> Array:
    """rgb.sum(axis=-1), the same numbers (added in the same order), without the slow
    reduction over a 3-long axis."""
    total: Array = rgb[..., 0] + rgb[..., 1]
    total += rgb[..., 2]
    return total


def median_of_four(layers: list[Array]) -> Array:
    """np.median(np.stack(layers), axis=0) for four layers, the same numbers, without a sort.

    Dropping the smaller of the pairs' minima and the larger of their maxima leaves the
    middle two.
    """
    low = np.minimum(layers[0], layers[1]), np.minimum(layers[2], layers[3])
    high = np.maximum(layers[0], layers[1]), np.maximum(layers[2], layers[3])
    middle: Array = (np.maximum(*low) + np.minimum(*high)) / 2
    return middle
