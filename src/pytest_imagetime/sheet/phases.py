"""Change between panels: copy test, distances and their order, the subject's trajectory,
shared colours (anchors) and shifted correlation (continuity) of consecutive panels.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.fft  # at import, not lazily at the first sheet (in a pytester run, say)
from numpy.typing import NDArray
from PIL import Image

from .filters import Array, Sums, box_sums, channel_sum, median_of_four
from .grid import Region
from .panels import Panel, render

# Subject trajectory: on a fixed scene, what differs from the per-pixel median of the four
# panels is the moving subject; its centroid must advance along one line in reading order.
MOTION_THRESHOLD = 0.15  # summed RGB difference from the median that counts as "moved"
MOTION_AREA = (0.003, 0.35)  # outside this share of the panel the scene itself moved
MOTION_MIN_SPREAD = 0.06  # centroid path shorter than this (panel fractions) shows no order
MOTION_STATIC = (0.06, 0.65)  # a fixed scene: this share of pixels stays within this of median
CHANGE_BLOCKS = 16  # change test: the 128x128 grey copy, 3x3-blurred, in 16x16 blocks
CHANGE_MAX_SHIFT = 2  # ... compared at the best of the shifts up to 2 px (1.6%) each way
# A near-copy (change below this) is compared again with the second panel cut one sheet pixel
# off in each direction: a gutter edge blurred by JPEG can move a detected cut by a pixel.
CHANGE_REALIGN_BELOW = 0.12
CHANGE_SETTLED_BELOW = 0.01  # a change this small is a copy already; no need to realign
ORDER_TOLERANCE = 0.08  # an order condition d(i,k) >= d(i,j) holds within 8% of d(i,j)
ORDER_SLACK = 0.003  # plus this absolute slack (near-equal distances carry no order)
NCC_MAX_SHIFT = 8  # shifts up to 8/40 = 20% of the panel
NCC_MIN_STD = 0.01  # windows flatter than this (grey std) correlate with nothing

PAIRS: tuple[tuple[int, int], ...] = ((0, 1), (1, 2), (2, 3))  # consecutive panels


def phase_change(sheet: Image.Image, first: Panel, second: Panel, first_box: Region,
                  second_box: Region) -> float:
    """How much changes from one panel to the next (copies: about 0); see _max_block_change.

    A near-copy is compared again with the second panel cut at the first one's size, one sheet
    pixel off in each direction: a gutter edge blurred by JPEG can move a cut by a pixel.
    """
    change = _max_block_change(first.detail, second.detail)
    if not CHANGE_SETTLED_BELOW <= change < CHANGE_REALIGN_BELOW:
        return change  # a clear change, or a copy already
    for box in _realigned(first_box, second_box, sheet.size):
        grey = np.asarray(render(sheet, box).convert("L"))
        change = min(change, _max_block_change(first.detail, box_sums(grey)))
        if change < CHANGE_SETTLED_BELOW:
            break
    return change


def _realigned(first: Region, second: Region, size: tuple[int, int]) -> list[Region]:
    """Boxes the size of ``first``, anchored at either corner of ``second``, +-1 pixel,
    kept inside the sheet."""
    width, height = first[2] - first[0], first[3] - first[1]
    anchors = ((second[0], second[1]), (second[2] - width, second[3] - height))
    boxes: list[Region] = []
    for x, y in anchors:
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                left = min(max(x + dx, 0.0), size[0] - width)
                top = min(max(y + dy, 0.0), size[1] - height)
                box = (left, top, left + width, top + height)
                if box not in boxes:
                    boxes.append(box)
    return boxes


def _max_block_change(a: Sums, b: Sums) -> float:
    """Largest mean absolute grey difference over a grid of blocks, at the best alignment.

    Blocks, not the whole panel: a small subject that moves is a real change. The best of
    the shifts up to CHANGE_MAX_SHIFT pixels: a copy pasted a pixel off, or resampled into a
    cell one pixel wider, is still a copy. Copies give about 0.

    ``a`` and ``b`` are 3x3 grey sums (see box_sums), so every sum here is an exact integer
    and one division at the end gives the mean on the [0, 1] scale. That makes a shortcut
    exact: |sum(a) - sum(b)| over a block is at most sum(|a - b|), so shifts are tried in
    the order of that bound, and once it reaches the best block difference found, no
    remaining shift can do better (on most pairs one or two shifts are compared in full).
    """
    n, s = CHANGE_BLOCKS, CHANGE_MAX_SHIFT
    side: int = (a.shape[0] - 2 * s) // n
    span = side * n
    core = a[s:s + span, s:s + span]
    bounds = np.abs(_shifted_block_sums(b, side, n, 2 * s + 1) - _block_sums(core, side))
    bounds = bounds.max(axis=(2, 3))  # (dy, dx)
    largest = math.inf  # the least, over the shifts, of the largest block sum
    for shift in np.argsort(bounds, axis=None):
        dy, dx = divmod(int(shift), bounds.shape[1])
        if bounds[dy, dx] >= largest:
            break
        moved = b[dy:dy + span, dx:dx + span]
        largest = min(largest, int(_block_sums(np.abs(core - moved), side).max()))
    return largest / (side * side * 9 * 255)


def _block_sums(values: Sums, side: int) -> NDArray[np.int32]:
    """Sums over the side x side blocks tiling ``values``: each block's rows first (whole
    rows add fast), then its columns."""
    h, w = values.shape
    rows = values.reshape(h // side, side, w).sum(axis=1, dtype=np.int32)
    sums: NDArray[np.int32] = np.add.reduceat(rows, np.arange(0, w, side), axis=1,
                                              dtype=np.int32)
    return sums


def _shifted_block_sums(b: Sums, side: int, n: int, shifts: int) -> NDArray[np.int32]:
    """Block sums of the n x n blocks of b shifted by (dy, dx), for every dy, dx below
    ``shifts``: (dy, dx, block row, block column)."""
    span = side * n
    rows = np.stack([b[dy:dy + span].reshape(n, side, -1).sum(axis=1, dtype=np.int32)
                     for dy in range(shifts)])  # (dy, block row, x)
    table = np.zeros((*rows.shape[:2], rows.shape[2] + 1), dtype=np.int32)
    np.cumsum(rows, axis=2, out=table[..., 1:])
    runs = table[..., side:] - table[..., :-side]  # sums over side columns from each x
    first = np.arange(shifts)[:, None] + side * np.arange(n)  # (dx, block column)
    sums: NDArray[np.int32] = runs[..., first].transpose(0, 2, 1, 3)
    return sums


def distance_matrix(thumbs: list[Array]) -> Array:
    """Mean absolute difference between every two blurred colour thumbnails."""
    n = len(thumbs)
    dist = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            dist[i, j] = dist[j, i] = float(np.abs(thumbs[i] - thumbs[j]).mean())
    return dist


def order_fraction(dist: Array) -> float:
    """Share of Robinson conditions that hold: for i < j < k, d(i,k) >= d(i,j) and d(j,k)."""
    n = dist.shape[0]
    held = total = 0
    for i in range(n):
        for j in range(i + 1, n):
            for k in range(j + 1, n):
                for inner in (dist[i, j], dist[j, k]):
                    total += 1
                    held += bool(dist[i, k] >= inner * (1 - ORDER_TOLERANCE) - ORDER_SLACK)
    return held / total


def trajectory_order(thumbs: list[Array]) -> float | None:
    """How monotone the subject's path is in reading order: |Kendall tau| of its centroids
    projected on their main axis (1: one direction, 0: back and forth). None when the scene
    itself moves (a pan) or nothing moves, so only the distance matrix can speak."""
    median = median_of_four(thumbs)
    difference = np.stack([channel_sum(np.abs(thumb - median)) for thumb in thumbs])
    if (difference.max(axis=0) < MOTION_STATIC[0]).mean() < MOTION_STATIC[1]:
        return None  # the camera or the whole scene moved: no single subject to follow
    moved = difference > MOTION_THRESHOLD
    areas = moved.mean(axis=(1, 2))
    if areas.min() < MOTION_AREA[0] or areas.max() > MOTION_AREA[1]:
        return None
    side = moved.shape[1]
    centroids = np.array([np.argwhere(mask).mean(axis=0) / side for mask in moved])
    centred = centroids - centroids.mean(axis=0)
    axis = np.linalg.svd(centred, full_matrices=False)[2][0]
    path = centred @ axis
    if float(path.max() - path.min()) < MOTION_MIN_SPREAD:
        return None
    pairs = [(i, j) for i in range(len(path)) for j in range(i + 1, len(path))]
    tau = sum(float(np.sign(path[j] - path[i])) for i, j in pairs) / len(pairs)
    return abs(tau)


def histogram_overlap(p: Array, q: Array) -> float:
    """Histogram intersection: 1 for identical colour distributions, 0 for disjoint ones."""
    return float(np.minimum(p, q).sum())


def shifted_correlations(layouts: list[Array],
                          pairs: tuple[tuple[int, int], ...]) -> list[float]:
    """Per pair of grey thumbnails, the best normalised cross-correlation of either one's
    centre inside the other (shifts up to NCC_MAX_SHIFT, 20%).

    Windows flatter than NCC_MIN_STD, and flat centres, correlate with nothing (0). One FFT
    per thumbnail and per centre serves every pair: the product of two spectra, transformed
    back, holds the dot product of a centre with every window.
    """
    s = NCC_MAX_SHIFT
    stack = np.stack(layouts)  # (panel, y, x), float32
    count, size = stack.shape[:2]
    m = size - 2 * s
    least = NCC_MIN_STD * m  # the norm of an m x m window with that std
    centres = stack[:, s:s + m, s:s + m]
    templates = centres - centres.mean(axis=(1, 2), keepdims=True)  # float32, as always
    t_norms = np.sqrt((templates ** 2).sum(axis=(1, 2))).astype(np.float64)
    # Both in one FFT: the thumbnails, and the centres at the origin, zero-padded.
    signals = np.zeros((2 * count, size, size))
    signals[:count] = stack
    signals[count:, :m, :m] = templates
    spectra = np.fft.rfft2(signals)
    # Ordered pairs: the centre of panel i searched in panel j.
    i, j = np.array([o for a, b in pairs for o in ((a, b), (b, a))]).T
    dots = np.fft.irfft2(np.conj(spectra[count + i]) * spectra[j], s=(size, size))
    dots = dots[:, :2 * s + 1, :2 * s + 1]  # the windows inside the panel (no wrap-around)
    sums, w_norms = _window_moments(signals[:count], m)
    # The windows are centred: their mean times the template's sum (0 up to rounding) goes.
    t_sums = signals[count:].sum(axis=(1, 2))
    numerators = dots - sums[j] * (t_sums[i] / (m * m))[:, None, None]
    norms = w_norms[j] * t_norms[i][:, None, None]
    ncc = np.where(w_norms[j] >= least, numerators / np.maximum(norms, 1e-12), 0.0)
    best = np.where(t_norms[i] < least, 0.0, ncc.max(axis=(1, 2)))
    return [max(float(best[2 * k]), float(best[2 * k + 1])) for k in range(len(pairs))]


def _window_moments(areas: Array, m: int) -> tuple[Array, Array]:
    """Sum and centred norm (sqrt of the summed squared deviation) of each m x m window,
    for each image of a stack. Window sums are products with a band of ones."""
    offset = np.arange(areas.shape[-1])[:, None] - np.arange(areas.shape[-1] - m + 1)
    band = ((offset >= 0) & (offset < m)).astype(np.float64)  # band[y, i]: i <= y < i + m
    both = band.T @ np.concatenate((areas, areas * areas)) @ band
    sums, squares = both[:len(areas)], both[len(areas):]
    energy = squares - sums * sums / (m * m)
    return sums, np.sqrt(np.maximum(energy, 0.0))
