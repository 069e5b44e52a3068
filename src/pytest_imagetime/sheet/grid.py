"""The grid of a sheet: flat gutter bands and seams along each axis, the regular-grid fit, and
the boxes of the four panels t1..t4 cut from it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import NDArray

from .filters import Array, Floats, Planes, row_medians, smoothed, unit

LINE_CHUNK = 64  # flat lines converted to floats at a time (blank sheets: all of them)
FLAT_TOLERANCE = 0.1  # a line is flat when every pixel is this close to one colour
BAND_COLOUR_STEP = 0.05  # a flat band ends where the line colour steps by more than this
# A gutter stands out from the panels on both sides: the mean colour step from the band to
# its neighbouring line is at least this (dark bands inside a dark starfield are not gutters).
GUTTER_MIN_EDGE = 0.06
MIDDLE_TOLERANCE = 0.06  # the 2x2 separator lies within 6% of the middle of the span
GRID_TOLERANCE = 0.05  # an i/k grid line is matched by a separator this close
MAX_GRID = 6  # panels per axis the grid fit tries
EXTRA_GUTTER_MAX_THICKNESS = 0.06  # thicker flat bands off the middle are content, not gutters
SEAM_WINDOW = 0.04  # local baseline of the seam test: +-4% of the span around the line
SEAM_MIDDLE_MIN = 2.0  # a seam at the middle: edge strength over baseline
SEAM_EXTRA_MIN = 6.0  # off the middle (gutterless axes only), far stronger than content edges
SEAM_FLOOR = 0.01  # added to the baseline: flat regions do not make any step a seam
# ... and it spans the line: at this share of the positions along it, the step across it is
# over twice (plus 0.03) the median step across nearby lines at that position. Picture
# borders of a collage and horizons in one photograph cover far less of the line.
SEAM_MIN_COVERAGE = 0.5
SEAM_POSITION_RATIO = 2.0
SEAM_POSITION_FLOOR = 0.03
PANEL_INSET = 0.03  # trimmed from each panel side before comparisons (gutter antialiasing)

Region = tuple[float, float, float, float]  # left, top, right, bottom, in image pixels


@dataclass(frozen=True)
class AxisStructure:
    """Separators found along one axis (horizontal ones cut rows, vertical ones columns)."""

    gutter: bool  # a flat band near the middle
    seam: bool  # no gutter there, but a discontinuity near the middle
    seam_strength: float  # the strongest edge ratio near the middle
    seam_coverage: float  # share of the line where that edge stands out
    offset: float  # distance of the chosen separator from the middle, fraction of the span
    inner_separators: int  # every inner separator counted, wherever it lies
    panels: int  # panels along the axis from the regular-grid fit
    cut: tuple[float, float]  # the band removed between the two halves, fractions of the span
    margins: tuple[float, float]  # flat border bands at the start and the end, fractions


def axis_structure(planes: Planes) -> AxisStructure:
    """Separators between the lines (axis 1) of ``planes``; transpose it for the other axis."""
    span = planes.shape[1]
    flat, step = _line_profiles(planes)
    bands = _flat_bands(planes, flat)
    inner = [b for b in bands if b.start > 0 and b.stop < span and b.edge >= GUTTER_MIN_EDGE]
    strength = _seam_strength(step)
    line = _strongest_middle_line(strength)
    coverage = _seam_coverage(planes, line)
    band = _middle_gutter(inner, span)
    margins = (0, 0)
    gutter = band is not None
    seam = not gutter and strength[line] >= SEAM_MIDDLE_MIN and coverage >= SEAM_MIN_COVERAGE
    if band is not None:
        cut = (band.start, band.stop)
        margins = _margins(bands, span, band.colour)
    elif seam:
        cut = (line, line)
    else:
        cut = (span // 2, span // 2)
    # A sheet that draws gutters draws them between all its panels: on such an axis only
    # gutters make the grid; on a gutterless axis, seams do.
    positions = [(cut[0] + cut[1]) / 2 / span] if (gutter or (seam and not inner)) else []
    if inner:
        positions += _extra_gutters(inner, span, cut)
    else:
        positions += _extra_seams(planes, strength, cut)
    return AxisStructure(
        gutter=gutter,
        seam=seam,
        seam_strength=float(strength[line]),
        seam_coverage=coverage,
        offset=abs((cut[0] + cut[1]) / 2 - span / 2) / span if (gutter or seam) else 0.0,
        inner_separators=len(positions),
        panels=_regular_grid(positions, has_middle=gutter or seam),
        cut=(cut[0] / span, cut[1] / span),
        margins=(margins[0] / span, margins[1] / span),
    )


def _line_profiles(planes: Planes) -> tuple[NDArray[np.bool_], Array]:
    """Per line, whether it is flat (see _flat_lines) and the mean step across it (for
    _seam_strength).

    One channel at a time, in buffers reused across channels: whole-sheet temporaries cost
    more in fresh memory than in arithmetic.
    """
    channels, lines, positions = planes.shape
    sums = np.empty((lines, positions - 2), dtype=np.uint16)  # 3-position sums of levels
    values = np.empty((lines, positions), dtype=np.float32)
    change = np.empty((lines - 2, positions), dtype=np.float32)
    ranges = np.zeros(lines, dtype=np.uint16)
    total = np.zeros(lines - 2)
    for channel in planes:
        np.add(channel[:, :-2], channel[:, 1:-1], out=sums, dtype=np.uint16)
        sums += channel[:, 2:]
        np.maximum(ranges, sums.max(axis=1) - sums.min(axis=1), out=ranges)
        unit(channel, out=values)
        np.subtract(values[2:], values[:-2], out=change)
        total += np.abs(change, out=change).sum(axis=1, dtype=np.float64)
    step: Array = total / (channels * positions)
    return _flat_lines(planes, ranges), step


def _flat_lines(planes: Planes, ranges: NDArray[np.uint16]) -> NDArray[np.bool_]:
    """Lines whose smoothed pixels (see smoothed) span at most 2 * FLAT_TOLERANCE in every
    channel: all lie within FLAT_TOLERANCE of one colour.

    A smoothed float is a 3-position sum of 8-bit levels over 3 * 255, give or take 1e-6
    (float32 rounding), so ``ranges``, the largest range of those sums over the channels,
    decides every line but the ones within half a level of the limit: those are measured in
    floats.
    """
    limit = 2 * FLAT_TOLERANCE * 3 * 255
    distance = ranges.astype(np.float64) - limit
    flat = distance < -0.5
    unsure = np.flatnonzero(np.abs(distance) <= 0.5)
    if len(unsure):
        smooth = smoothed(unit(planes[:, unsure]))
        spread = (smooth.max(axis=2) - smooth.min(axis=2)).max(axis=0)
        flat[unsure] = spread <= 2 * FLAT_TOLERANCE
    return flat


def _middle_gutter(inner: list[Band], span: int) -> Band | None:
    """The gutter band that reaches into the middle window, the one closest to the middle."""
    middle, reach = span / 2, MIDDLE_TOLERANCE * span
    near = [b for b in inner if b.start <= middle + reach and b.stop >= middle - reach]
    return min(near, key=lambda b: abs((b.start + b.stop) / 2 - middle)) if near else None


def _strongest_middle_line(strength: Array) -> int:
    span = strength.shape[0]
    window = _middle_window(span)
    return int(window[int(np.argmax(strength[window]))]) if window.size else span // 2


@dataclass(frozen=True)
class Band:
    """A run [start, stop) of flat lines of one colour."""

    start: int
    stop: int
    colour: tuple[float, float, float]
    edge: float  # mean colour step from the band to the lines beside it (the weaker side)


def _flat_bands(planes: Planes, flat_lines: NDArray[np.bool_]) -> list[Band]:
    """Each run of flat lines (``flat_lines``, see _flat_lines) of one colour.

    A run is split where the line colour steps by more than BAND_COLOUR_STEP, so a white
    gutter does not merge with a pale sky band next to it.
    """
    flat = np.flatnonzero(flat_lines)
    if not len(flat):
        return []
    colour = _line_colours(planes, flat)  # (channel, flat line)
    step = np.abs(np.diff(colour, axis=1)).max(axis=0) > BAND_COLOUR_STEP
    breaks = np.concatenate(([True], (np.diff(flat) > 1) | step))
    starts = np.flatnonzero(breaks)
    ends = [*starts[1:], len(flat)]
    return [_band(planes, colour[:, a:b], int(flat[a]), int(flat[b - 1]) + 1)
            for a, b in zip(starts, ends, strict=True)]


def _line_colours(planes: Planes, lines: NDArray[np.intp]) -> Floats:
    """The mean colour of each of ``lines`` (smoothed as for flatness), (channel, line).

    Only flat lines need it (few, on most sheets); blank sheets have nothing else, so they
    go in chunks that keep temporaries small (fresh memory costs more than the arithmetic).
    """
    colour = np.empty((planes.shape[0], len(lines)), dtype=np.float32)
    for start in range(0, len(lines), LINE_CHUNK):
        part = lines[start:start + LINE_CHUNK]
        colour[:, start:start + len(part)] = smoothed(unit(planes[:, part])).mean(axis=2)
    return colour


def _band(planes: Planes, colour: Floats, start: int, stop: int) -> Band:
    """The band with its colour and edge: per side, the largest step over the next 3 lines.

    ``colour`` holds the colours of the band's lines, start to stop.
    """
    mean = colour.mean(axis=1)
    before = list(range(start - 1, max(-1, start - 4), -1))
    after = list(range(stop, min(planes.shape[1], stop + 3)))
    # Per line beside the band: the largest channel difference, averaged along the line.
    smooth = smoothed(unit(planes[:, before + after]))  # (channel, line, position)
    steps = np.abs(smooth - mean[:, None, None]).max(axis=0).mean(axis=1)
    sides = (steps[:len(before)], steps[len(before):])
    edge = min((float(side.max()) for side in sides if len(side)), default=0.0)
    return Band(start, stop, _triple(mean), edge)


def _triple(values: Floats) -> tuple[float, float, float]:
    return (float(values[0]), float(values[1]), float(values[2]))


def _margins(bands: list[Band], span: int, gutter: tuple[float, float, float]) -> tuple[int, int]:
    """Border bands drawn in the gutter's colour (a frame around the sheet), in lines."""

    def framed(band: Band) -> bool:
        return max(abs(a - b) for a, b in zip(band.colour, gutter, strict=True)) <= 2 * \
            BAND_COLOUR_STEP

    before = next((b.stop for b in bands if b.start == 0 and framed(b)), 0)
    after = next((span - b.start for b in bands if b.stop == span and framed(b)), 0)
    return (before, after)


def _seam_strength(step: Array) -> Array:
    """Edge strength across each line over its local baseline (about 1 on ordinary lines).

    ``step`` (from _line_profiles) is the step between lines y-1 and y+1 (two lines apart,
    so a seam blurred by downsampling still shows) averaged over the full line, at index
    y - 1. It is divided by the median step within +-SEAM_WINDOW of the span, the step's own
    neighbourhood (+-2 lines) left out.

    The medians are the costly part, so only lines whose strength is read get one: the
    middle window (where the seam line is chosen) and lines whose step could make an extra
    seam (strength >= SEAM_EXTRA_MIN needs step >= SEAM_EXTRA_MIN * SEAM_FLOOR; half that,
    for a margin). The other lines keep 0.
    """
    span = step.shape[0] + 2
    strength = np.zeros(span)
    if span < 5:
        return strength
    needed = step >= SEAM_EXTRA_MIN * SEAM_FLOOR / 2  # at index y - 1, as ``step``
    needed[_middle_window(span) - 1] = True
    needed[span // 2 - 1] = True  # the middle line, chosen when the window is empty
    lines = 1 + np.flatnonzero(needed)
    reach = max(5, round(SEAM_WINDOW * span))
    windows = sliding_window_view(np.pad(step, reach, mode="reflect"), 2 * reach + 1)
    keep = np.r_[0:reach - 2, reach + 3:2 * reach + 1]
    baseline = row_medians(windows[lines - 1][:, keep])
    strength[lines] = step[lines - 1] / (baseline + SEAM_FLOOR)
    return strength


def _seam_coverage(planes: Planes, line: int) -> float:
    """Share of positions where the step across ``line`` stands out from nearby lines' steps."""
    span = planes.shape[1]
    if not 1 <= line <= span - 2:
        return 0.0
    reach = max(5, round(SEAM_WINDOW * span))
    lo, hi = max(1, line - reach), min(span - 1, line + reach + 1)  # the lines compared
    values = unit(planes[:, lo - 1:hi + 1])
    nearby = np.abs(values[:, 2:] - values[:, :-2]).max(axis=0)  # (line, position)
    others = np.concatenate((nearby[:max(0, line - 2 - lo)], nearby[line + 3 - lo:]))
    if not len(others):
        return 0.0
    baseline = row_medians(np.ascontiguousarray(others.T))  # per position
    across = nearby[line - lo]
    return float(np.mean(across > SEAM_POSITION_RATIO * baseline + SEAM_POSITION_FLOOR))


def _middle_window(span: int) -> NDArray[np.intp]:
    reach = MIDDLE_TOLERANCE * span
    lo = max(1, math.ceil(span / 2 - reach))
    hi = min(span - 2, math.floor(span / 2 + reach))
    return np.arange(lo, hi + 1)


def _extra_gutters(inner: list[Band], span: int, cut: tuple[int, int]) -> list[float]:
    """Positions (fractions of the span) of thin flat bands away from the chosen cut."""
    away = max(2, round(GRID_TOLERANCE * span))
    return [(b.start + b.stop) / 2 / span for b in inner
            if b.stop - b.start <= EXTRA_GUTTER_MAX_THICKNESS * span
            and (b.stop < cut[0] - away or b.start > cut[1] + away)]


def _extra_seams(planes: Planes, strength: Array, cut: tuple[int, int]) -> list[float]:
    """Positions of very strong, full-line seams away from the cut and from each other."""
    span = strength.shape[0]
    away = max(2, round(GRID_TOLERANCE * span))
    taken = [cut[0], cut[1]]
    found: list[float] = []
    for line in (int(i) for i in np.argsort(-strength, kind="stable")):
        if strength[line] < SEAM_EXTRA_MIN:
            break
        if all(abs(line - t) > away for t in taken) and \
                _seam_coverage(planes, line) >= SEAM_MIN_COVERAGE:
            taken.append(line)
            found.append(line / span)
    return found


def _regular_grid(positions: list[float], has_middle: bool) -> int:
    """Panels along an axis: the k whose lines i/k (0 < i < k) match the separators exactly.

    Every grid line needs a separator and every separator a grid line, so stray content
    edges or white gaps never make a grid; with no exact fit the middle separator (if any)
    decides between 2 and 1.
    """
    for k in range(MAX_GRID, 1, -1):
        lines = [i / k for i in range(1, k)]
        if all(any(abs(p - x) <= GRID_TOLERANCE for p in positions) for x in lines) and all(
                any(abs(p - x) <= GRID_TOLERANCE for x in lines) for p in positions):
            return k
    return 2 if has_middle else 1


def panel_boxes(width: int, height: int, rows: AxisStructure, cols: AxisStructure) -> list[Region]:
    """t1..t4 in reading order, gutters and framing margins cut away (sub-pixel exact)."""
    ys = _halves(height, rows)
    xs = _halves(width, cols)
    return [(x0, y0, x1, y1) for (y0, y1) in ys for (x0, x1) in xs]


def _halves(span: int, axis: AxisStructure) -> tuple[tuple[float, float], tuple[float, float]]:
    """The two ranges of an axis around the cut, in image pixels."""
    start, end = axis.margins[0] * span, (1 - axis.margins[1]) * span
    cut0, cut1 = axis.cut[0] * span, axis.cut[1] * span
    if not start < cut0 <= cut1 < end:
        start, end = 0.0, float(span)
    least = min(1.0, span / 2)  # never an empty panel
    return (start, max(start + least, cut0)), (min(cut1, end - least), end)


def inset(box: Region) -> Region:
    left, top, right, bottom = box
    dx, dy = (right - left) * PANEL_INSET, (bottom - top) * PANEL_INSET
    return (left + dx, top + dy, right - dx, bottom - dy)
