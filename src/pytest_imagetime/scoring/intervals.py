"""Bootstrap confidence intervals over a run's items: the paired interval of the change
between two runs over the cases both scored, and each run's intervals of Overall and of the
tree levels (resampling cases), with the rule for reusing a previous report's intervals.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from ..rubric.facts import LEVEL_KEYS

BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_CHUNK = 100  # resamples drawn at once
BOOTSTRAP_SEED = 20260606
INTERVAL_LEVEL = 0.95
INTERVAL_METRICS: tuple[str, ...] = ("overall", "gate", *LEVEL_KEYS)
# How a report's intervals were drawn, kept in its manifest: the same values drawn the same
# way by the same numpy give the same intervals, so a resumed run whose scores did not
# change takes its last report's instead of loading numpy to draw them again. ``draws``
# changes whenever the drawing does (its generators, chunks or index types).
INTERVAL_METHOD: dict[str, Any] = {"method": "bootstrap", "resamples": BOOTSTRAP_SAMPLES,
                                   "seed": BOOTSTRAP_SEED, "level": INTERVAL_LEVEL, "draws": 2}


def item_metric(item: Mapping[str, Any], metric: str) -> float | None:
    if item["status"] == "error":
        return None
    if metric in ("overall", "c_mean", "d_mean"):
        value = item[metric]
    elif metric == "gate" or metric in LEVEL_KEYS:
        value = item["tree"][metric]
    else:
        value = item["scores"][metric]
    return None if value is None else float(value)


def paired_bootstrap(baseline: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]],
                     metric: str, level: float = 0.95) -> tuple[float, float, int] | None:
    """CI of mean(current - baseline) over the cases scored in both runs, or None."""
    before = {i["case_id"]: item_metric(i, metric) for i in baseline}
    pairs = [(before[i["case_id"]], item_metric(i, metric)) for i in current
             if i["case_id"] in before]
    diffs = [b - a for a, b in pairs if a is not None and b is not None]
    if len(diffs) < 2:
        return None
    rng = random.Random(BOOTSTRAP_SEED)
    n = len(diffs)
    means = sorted(math.fsum(rng.choices(diffs, k=n)) / n for _ in range(BOOTSTRAP_SAMPLES))
    tail = (1 - level) / 2
    low = means[int(tail * (BOOTSTRAP_SAMPLES - 1))]
    high = means[int((1 - tail) * (BOOTSTRAP_SAMPLES - 1))]
    return low, high, n


def interval_values(items: Sequence[Mapping[str, Any]]) -> list[list[float]]:
    """Each interval metric's values over the judged items, in the items' order: what the
    intervals are drawn from."""
    return [[v for v in (item_metric(i, metric) for i in items) if v is not None]
            for metric in INTERVAL_METRICS]


def kept_intervals(previous: Mapping[str, Any] | None, items: Sequence[Mapping[str, Any]],
                   numpy_version: str | None) -> dict[str, list[float] | None] | None:
    """The previous report's intervals when they were drawn from these very values, the
    same way, by this numpy; None otherwise (then they are drawn)."""
    if previous is None or numpy_version is None:
        return None
    try:
        manifest = previous["manifest"]
        same_drawing = (manifest.get("confidence_method") == INTERVAL_METHOD and
                        manifest["environment"]["libraries"].get("numpy") == numpy_version)
        kept = previous["confidence"]
        if not same_drawing or not isinstance(kept, dict) \
                or set(kept) != set(INTERVAL_METRICS):
            return None
        if interval_values(previous["items"]) != interval_values(items):
            return None
    except (KeyError, TypeError, AttributeError, ValueError):
        return None  # an older or damaged report: draw them
    return {metric: None if kept[metric] is None else list(kept[metric])
            for metric in INTERVAL_METRICS}


def confidence_intervals(items: Sequence[Mapping[str, Any]], level: float = INTERVAL_LEVEL
                         ) -> dict[str, list[float] | None]:
    """Bootstrap intervals of the run's Overall and of each tree level over its judged items
    (resampling cases), so a reader sees how much a mean could move with other cases.

    Each metric draws from its own generator (seeded by its place in the list), so its
    interval does not depend on which other metrics have values. Equal values need no
    resampling: every resample has their mean."""
    import numpy as np

    out: dict[str, list[float] | None] = {}
    tail = (1 - level) / 2
    for place, (metric, found) in enumerate(zip(INTERVAL_METRICS, interval_values(items),
                                                strict=True)):
        values = np.array(found)
        if len(values) < 2:
            out[metric] = None
            continue
        if values.min() == values.max():
            out[metric] = [round(float(values[0]), 4)] * 2
            continue
        rng = np.random.default_rng((BOOTSTRAP_SEED, place))
        # Indices as narrow as the count allows (drawing and gathering int64 cost three
        # times as much), in chunks of resamples: all at once would take memory growing
        # with the cases.
        dtype = np.uint16 if len(values) <= np.iinfo(np.uint16).max else np.int64
        means = np.concatenate([
            values[rng.integers(0, len(values), size=(rows, len(values)), dtype=dtype)]
            .mean(axis=1) for rows in _chunks(BOOTSTRAP_SAMPLES, BOOTSTRAP_CHUNK)])
        out[metric] = [round(float(np.quantile(means, tail)), 4),
                       round(float(np.quantile(means, 1 - tail)), 4)]
    return out


def _chunks(total: int, size: int) -> list[int]:
    return [min(size, total - start) for start in range(0, total, size)]
