"""The pixel judge: scores the layout, continuity and phase dimensions from pixels alone.

It needs no model and no network, so it runs on every sheet, in CI and offline. It scores only
what pixels can show (C0, D0, D3, D5, D9, D14); every other dimension is null in its
judgments, and its scores are never mixed with a VLM judge's. Formulas: docs/pixel-judge.md.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ..rubric.facts import ALL_DIMS, RUBRIC_VERSION, SCORE_MAX, SCORE_MIN
from ..rubric.judgment import Judgment
from ..sheet import METRICS_VERSION
from .base import Judge, SheetToJudge

if TYPE_CHECKING:  # numpy is imported at the first sheet judged, not when a run collects
    from ..sheet.metrics import SheetMetrics

JUDGE_NAME = "pixel"
JUDGE_MODEL = f"pixel-metrics/{METRICS_VERSION}"
SCORED_DIMS: frozenset[str] = frozenset({"C0", "D0", "D3", "D5", "D9", "D14"})

# Ramps: a measure at or below the first value scores 0, at or above the second 10.
ORDER_RAMP = (0.5, 1.0)  # share of order conditions holding (chance is about one half)
CHANGE_RAMP = (0.1, 0.3)  # weakest transition: largest block change / the pair's contrast
ANCHOR_RAMP = (0.45, 0.85)  # mean colour-histogram overlap of consecutive panels
CONTINUITY_RAMP = (0.35, 0.85)  # mean best shifted correlation of consecutive panels
CONTRAST_RAMP = (0.02, 0.05)  # weakest panel's grey-level std
DETAIL_RAMP = (0.02, 0.2)  # weakest panel's Laplacian variance / contrast^2 (log scale)
SIZE_RAMP = (32, 160)  # smallest panel side, original pixels
ASPECT_RAMP = (1.03, 1.5)  # long / short side: square up to 1.03, half credit from 1.5
BALANCE_RAMP = (0.5, 0.9)  # smallest / largest panel area

# Separation credit per axis (D0) and for the sheet (C0).
AXIS_CREDIT = {"gutter": 1.0, "seam": 0.7, "none": 0.2}
SHEET_CREDIT = {2: 1.0, 1: 0.6, 0: 0.3}  # by the number of separated axes
ORDER_SHARE_C0 = 0.6  # share of C0 that rests on the temporal order evidence
ORDER_SHARE_D9 = 0.7  # share of D9 that rests on the order (the rest on distinctiveness)
UNUSABLE_D0_MAX = 2  # D0 of a sheet that is not a usable 2x2 sheet


def ramp(value: float, bounds: tuple[float, float]) -> float:
    lo, hi = bounds
    return min(1.0, max(0.0, (value - lo) / (hi - lo)))


def to_score(quality: float) -> int:
    """0-10 from a quality in [0, 1], rounded down: between two scores, the lower one."""
    return max(SCORE_MIN, min(SCORE_MAX, math.floor(quality * SCORE_MAX + 1e-6)))


# ---------------------------------------------------------------- qualities in [0, 1]


def distinct_quality(m: SheetMetrics) -> float:
    """The weakest consecutive transition, relative to contrast: copies 0, clear changes 1."""
    return min(ramp(change, CHANGE_RAMP) for change in m.relative_changes)


def order_quality(m: SheetMetrics) -> float:
    """The weaker of two order cues: distances growing with the time gap, and (on a fixed
    scene) a subject path that runs one way. |tau| 1 counts as all conditions held, 0 as
    chance (one half)."""
    fraction = m.order_fraction
    if m.trajectory_order is not None:
        fraction = min(fraction, 0.5 + 0.5 * m.trajectory_order)
    return ramp(fraction, ORDER_RAMP)


def related_quality(m: SheetMetrics) -> float:
    return 1.0 - m.unrelated_pairs / 3


def layout_quality(m: SheetMetrics) -> float:
    if m.unreadable or m.wrong_panel_count:
        return 0.0
    square = 1.0 - 0.5 * ramp(m.aspect_ratio, ASPECT_RAMP)
    return SHEET_CREDIT[m.separated_axes] * square


def separation_quality(m: SheetMetrics) -> float:
    def axis(gutter: bool, seam: bool) -> float:
        return AXIS_CREDIT["gutter" if gutter else "seam" if seam else "none"]

    return (axis(m.h_gutter, m.h_seam) + axis(m.v_gutter, m.v_seam)) / 2


def readability_quality(m: SheetMetrics) -> float:
    detail = math.log10(max(min(m.details), 1e-9))
    return min(ramp(min(m.contrasts), CONTRAST_RAMP),
               ramp(detail, (math.log10(DETAIL_RAMP[0]), math.log10(DETAIL_RAMP[1]))),
               ramp(m.panel_min_side, SIZE_RAMP))


# ---------------------------------------------------------------- scores


def pixel_scores(m: SheetMetrics) -> dict[str, int]:
    """The six dimensions the pixel judge scores, from one sheet's metrics."""
    # Copies and unrelated pictures carry no temporal order, whatever the distances say.
    temporal = order_quality(m) * distinct_quality(m) * related_quality(m)
    c0 = layout_quality(m) * (1 - ORDER_SHARE_C0 + ORDER_SHARE_C0 * temporal)
    readable = 1 - m.blank_panels / 4  # blank panels hold no anchors, no camera, no phase
    d0 = separation_quality(m) * ramp(m.panel_balance, BALANCE_RAMP) * readable
    d9 = (distinct_quality(m) * (1 - ORDER_SHARE_D9 + ORDER_SHARE_D9 * order_quality(m))
          * related_quality(m))
    scores = {
        "C0": to_score(c0),
        "D0": to_score(d0),
        "D3": to_score(ramp(sum(m.anchors) / 3, ANCHOR_RAMP) * readable),
        "D5": to_score(ramp(sum(m.continuities) / 3, CONTINUITY_RAMP) * readable),
        "D9": to_score(d9),
        "D14": to_score(readability_quality(m)),
    }
    if m.unreadable or m.wrong_panel_count:
        scores["D0"] = min(scores["D0"], UNUSABLE_D0_MAX)
    return scores


def summary(m: SheetMetrics, labels: tuple[str, ...]) -> str:
    """One plain line: what the pixels show."""
    parts = [
        _layout_phrase(m),
        f"aspect {m.aspect_ratio:.2f}",
        f"{m.blank_panels} blank panel(s)" if m.blank_panels else "4 readable panels",
        f"order conditions held {m.order_fraction:.0%}",
        f"weakest change {min(m.changes):.3f}",
        f"anchors {sum(m.anchors) / 3:.2f}",
        f"continuity {sum(m.continuities) / 3:.2f}",
        "labels: " + (", ".join(labels) if labels else "none"),
    ]
    return "; ".join(parts)


def _layout_phrase(m: SheetMetrics) -> str:
    if m.grid_rows > 2 or m.grid_cols > 2:
        return f"{m.grid_rows}x{m.grid_cols} grid, not 2x2"
    if m.wrong_panel_count:
        return "two panels, not 2x2"
    kinds = {(True, True): "gutters", (False, False): "seams"}
    separators = kinds.get((m.h_gutter, m.v_gutter), "a gutter and a seam")
    if m.separated_axes == 2:
        return f"2x2 grid with {separators}"
    return f"{m.separated_axes} of 2 separators found"


class PixelJudge(Judge):
    """Scores C0, D0, D3, D5, D9 and D14 from the pixel metrics; the rest stays null."""

    # Computes here, in Python: it judges on the thread that stored the sheet (a pool
    # thread would only wait for the interpreter lock).
    cpu_bound = True

    def __init__(self, argument: str | None = None) -> None:
        if argument is not None:
            raise ValueError(f"the pixel judge takes no argument, got {argument!r}")

    @property
    def name(self) -> str:
        return JUDGE_NAME

    @property
    def scored_dims(self) -> frozenset[str]:
        return SCORED_DIMS

    def config(self) -> Mapping[str, Any]:
        return {"judge": JUDGE_NAME, "judge_model": JUDGE_MODEL, "rubric_version": RUBRIC_VERSION}

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        started = time.perf_counter()
        if sheet.metrics is not None:
            metrics = sheet.metrics
        else:
            from ..sheet.metrics import analyze

            metrics = analyze(sheet.image)
        labels = metrics.implied_labels()
        scored = pixel_scores(metrics)
        scores: dict[str, int | None] = {dim: scored.get(dim) for dim in ALL_DIMS}
        return Judgment(
            judge=JUDGE_NAME,
            judge_model=JUDGE_MODEL,
            rubric_version=RUBRIC_VERSION,
            prompt_version=None,
            scores=scores,
            labels=labels,
            rationale=summary(metrics, labels),
            raw=metrics.to_json(),
            date=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            latency_s=time.perf_counter() - started,
            evaluates_predicates=False,
        )
