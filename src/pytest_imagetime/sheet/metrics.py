"""What the pixels of one sheet show: ``analyze`` and the ``SheetMetrics`` it returns.

``analyze`` reads only pixels: it finds the separators of the 2x2 grid (``grid``), cuts and
renders the four panels t1..t4 (``panels``) and compares consecutive panels (``phases``),
through the filters of ``filters``; it is deterministic and cheap enough to run on every
sheet. ``SheetMetrics.implied_labels`` names the failures that the pixels alone justify; they
feed the rubric's caps for every judge, so each threshold errs towards silence.
docs/pixel-judge.md documents every formula and threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from PIL import Image

from .filters import as_rgb, enlarged, line_planes
from .grid import axis_structure, inset, panel_boxes
from .panels import read_panels
from .phases import (
    PAIRS,
    distance_matrix,
    histogram_overlap,
    order_fraction,
    phase_change,
    shifted_correlations,
    trajectory_order,
)

BLANK_CONTRAST = 0.02  # grey-level std of a blank panel (about 5/255)
UNREADABLE_SIDE = 32  # panels smaller than this (original pixels) cannot be read
# A copied phase: no block differs by more than this on average, nor by more than this share
# of the pair's contrast (so that dim, low-contrast panels with real changes are not copies).
COPY_MAX_CHANGE = 0.03
COPY_MAX_RELATIVE_CHANGE = 0.25
# Unrelated pictures: a consecutive pair with both a low colour-histogram overlap and a low
# shifted correlation shares no scene.
UNRELATED_ANCHOR = 0.6
UNRELATED_CONTINUITY = 0.5
UNRELATED_PAIRS_MIN = 2  # of the three consecutive pairs
# One continuous picture: no gutter anywhere, no seam on at least one axis, and some
# consecutive pair that is not a shifted view of the other (repeated views are a sheet).
PANORAMA_MAX_CONTINUITY = 0.6


@dataclass(frozen=True)
class SheetMetrics:
    """What the pixels of one sheet show. Panels are numbered 1-4 for t1-t4.

    Every field is a JSON primitive; docs/pixel-judge.md defines each one.
    """

    width: int
    height: int
    aspect_ratio: float  # long side / short side
    h_gutter: bool  # horizontal separator (between the rows) is a gutter
    v_gutter: bool
    h_seam: bool  # ... or a bare seam
    v_seam: bool
    h_seam_strength: float
    v_seam_strength: float
    h_seam_coverage: float
    v_seam_coverage: float
    h_offset: float
    v_offset: float
    h_inner_separators: int
    v_inner_separators: int
    grid_rows: int
    grid_cols: int
    panel_min_side: int  # original pixels
    panel_balance: float  # smallest panel area / largest
    contrast_1: float
    contrast_2: float
    contrast_3: float
    contrast_4: float
    detail_1: float
    detail_2: float
    detail_3: float
    detail_4: float
    distance_12: float
    distance_23: float
    distance_34: float
    change_12: float
    change_23: float
    change_34: float
    order_fraction: float
    trajectory_order: float | None  # |Kendall tau| of the subject's path; None: not measurable
    anchor_12: float
    anchor_23: float
    anchor_34: float
    continuity_12: float
    continuity_23: float
    continuity_34: float
    continuity_13: float  # vertical neighbours, for the two-panel test
    continuity_24: float

    # ------------------------------------------------------------ grouped views

    @property
    def contrasts(self) -> tuple[float, float, float, float]:
        return (self.contrast_1, self.contrast_2, self.contrast_3, self.contrast_4)

    @property
    def details(self) -> tuple[float, float, float, float]:
        return (self.detail_1, self.detail_2, self.detail_3, self.detail_4)

    @property
    def distances(self) -> tuple[float, float, float]:
        return (self.distance_12, self.distance_23, self.distance_34)

    @property
    def changes(self) -> tuple[float, float, float]:
        return (self.change_12, self.change_23, self.change_34)

    @property
    def anchors(self) -> tuple[float, float, float]:
        return (self.anchor_12, self.anchor_23, self.anchor_34)

    @property
    def continuities(self) -> tuple[float, float, float]:
        return (self.continuity_12, self.continuity_23, self.continuity_34)

    # ------------------------------------------------------------ derived facts

    @property
    def gutters(self) -> int:
        return int(self.h_gutter) + int(self.v_gutter)

    @property
    def separated_axes(self) -> int:
        """Axes (0-2) with a gutter or a seam near the middle."""
        return int(self.h_gutter or self.h_seam) + int(self.v_gutter or self.v_seam)

    @property
    def blank_panels(self) -> int:
        return sum(1 for c in self.contrasts if c < BLANK_CONTRAST)

    @property
    def unreadable(self) -> bool:
        """A blank panel, or panels too small to read."""
        return self.blank_panels > 0 or self.panel_min_side < UNREADABLE_SIDE

    @property
    def wrong_panel_count(self) -> bool:
        """A regular grid of more than 2 on an axis, or a two-panel layout.

        Two panels: a gutter on one axis, while across the other axis the halves are parts of
        one picture (no gutter, no seam, and no half is a shifted view of its neighbour).
        """
        if self.grid_rows > 2 or self.grid_cols > 2:
            return True
        if self.h_gutter and not (self.v_gutter or self.v_seam):
            return max(self.continuity_12, self.continuity_34) < PANORAMA_MAX_CONTINUITY
        if self.v_gutter and not (self.h_gutter or self.h_seam):
            return max(self.continuity_13, self.continuity_24) < PANORAMA_MAX_CONTINUITY
        return False

    @property
    def relative_changes(self) -> tuple[float, ...]:
        """Each consecutive change over the pair's larger contrast (dim panels change less)."""
        c = self.contrasts
        return tuple(change / max(c[i], c[j], 1e-6)
                     for change, (i, j) in zip(self.changes, PAIRS, strict=True))

    @property
    def copied_pairs(self) -> tuple[bool, ...]:
        """Consecutive pairs (t1-t2, t2-t3, t3-t4) that are near-identical."""
        return tuple(change < COPY_MAX_CHANGE and relative < COPY_MAX_RELATIVE_CHANGE
                     for change, relative in zip(self.changes, self.relative_changes,
                                                 strict=True))

    @property
    def unrelated_pairs(self) -> int:
        """Consecutive pairs sharing neither colours nor layout: different pictures."""
        return sum(1 for a, c in zip(self.anchors, self.continuities, strict=True)
                   if a < UNRELATED_ANCHOR and c < UNRELATED_CONTINUITY)

    @property
    def continuous_picture(self) -> bool:
        """No gutter, an axis without any seam, and panels that are not shifted views."""
        return (self.gutters == 0 and self.separated_axes < 2
                and min(self.continuities) < PANORAMA_MAX_CONTINUITY)

    def implied_labels(self) -> tuple[str, ...]:
        """Failure labels the pixels alone justify (conservative: silent when in doubt)."""
        if self.unreadable or self.wrong_panel_count:
            return ("not_2x2_sheet",)
        labels: list[str] = []
        if self.continuous_picture or self.unrelated_pairs >= UNRELATED_PAIRS_MIN:
            labels.append("panorama_or_collage")
        if any(self.copied_pairs):
            labels.append("copied_phases")
        return tuple(labels)

    def to_json(self) -> dict[str, Any]:
        # Field by field: asdict's deep copy of 44 numbers cost more than the rest of this.
        return {name: _plain(getattr(self, name)) for name in _METRIC_FIELDS}


_METRIC_FIELDS = tuple(f.name for f in fields(SheetMetrics))


def _plain(value: Any) -> Any:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return round(float(value), 6) if math.isfinite(value) else None
    return value


def analyze(image: Image.Image) -> SheetMetrics:
    """Measure one sheet. Deterministic; any mode and size is accepted."""
    original = image.size
    rgb = enlarged(as_rgb(image))
    rows = axis_structure(line_planes(rgb, across_rows=True))
    cols = axis_structure(line_planes(rgb, across_rows=False))
    boxes = panel_boxes(rgb.width, rgb.height, rows, cols)
    panels = read_panels(rgb, [inset(box) for box in boxes])
    scale = max(original) / max(rgb.size)
    sides = [min(b[2] - b[0], b[3] - b[1]) for b in boxes]
    areas = [(b[2] - b[0]) * (b[3] - b[1]) for b in boxes]
    dist = distance_matrix([p.colour for p in panels])
    changes = [phase_change(rgb, panels[i], panels[j], inset(boxes[i]), inset(boxes[j]))
               for i, j in PAIRS]
    anchors = [histogram_overlap(panels[i].histogram, panels[j].histogram) for i, j in PAIRS]
    continuity = shifted_correlations([p.layout for p in panels], (*PAIRS, (0, 2), (1, 3)))
    return SheetMetrics(
        width=original[0],
        height=original[1],
        aspect_ratio=max(original) / max(1, min(original)),
        h_gutter=rows.gutter,
        v_gutter=cols.gutter,
        h_seam=rows.seam,
        v_seam=cols.seam,
        h_seam_strength=rows.seam_strength,
        v_seam_strength=cols.seam_strength,
        h_seam_coverage=rows.seam_coverage,
        v_seam_coverage=cols.seam_coverage,
        h_offset=rows.offset,
        v_offset=cols.offset,
        h_inner_separators=rows.inner_separators,
        v_inner_separators=cols.inner_separators,
        grid_rows=rows.panels,
        grid_cols=cols.panels,
        panel_min_side=math.floor(min(sides) * scale),
        panel_balance=min(areas) / max(1, max(areas)),
        contrast_1=panels[0].contrast,
        contrast_2=panels[1].contrast,
        contrast_3=panels[2].contrast,
        contrast_4=panels[3].contrast,
        detail_1=panels[0].detail_ratio,
        detail_2=panels[1].detail_ratio,
        detail_3=panels[2].detail_ratio,
        detail_4=panels[3].detail_ratio,
        distance_12=float(dist[0, 1]),
        distance_23=float(dist[1, 2]),
        distance_34=float(dist[2, 3]),
        change_12=changes[0],
        change_23=changes[1],
        change_34=changes[2],
        order_fraction=order_fraction(dist),
        trajectory_order=trajectory_order([p.motion for p in panels]),
        anchor_12=anchors[0],
        anchor_23=anchors[1],
        anchor_34=anchors[2],
        continuity_12=continuity[0],
        continuity_23=continuity[1],
        continuity_34=continuity[2],
        continuity_13=continuity[3],
        continuity_24=continuity[4],
    )
