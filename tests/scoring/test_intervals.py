"""Bootstrap confidence intervals: the paired interval of a change between runs, each run's
intervals over its items, and when a previous report's intervals are kept."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_imagetime.rubric.facts import LEVEL_KEYS
from pytest_imagetime.scoring.intervals import (
    INTERVAL_METHOD,
    confidence_intervals,
    kept_intervals,
    paired_bootstrap,
)

scores = st.floats(0, 10, allow_nan=False)
# Item means on a quarter-point grid: spread well beyond the intervals' rounding to 4 places.
quarters = st.integers(0, 40).map(lambda k: k / 4)


def test_paired_bootstrap_brackets_the_change() -> None:
    base = [{"case_id": f"c{i}", "status": "passed", "overall": 8.0 + (i % 3) * 0.1}
            for i in range(30)]
    now = [{"case_id": f"c{i}", "status": "passed",
            "overall": 7.0 + (i % 3) * 0.1 + (0.5 if i % 2 else -0.5)} for i in range(30)]
    ci = paired_bootstrap(base, now, "overall")
    assert ci is not None
    low, high, pairs = ci
    assert low < -1.0 < high and high < 0 and pairs == 30
    errors = [dict(item, status="error") for item in now]
    assert paired_bootstrap(base, errors, "overall") is None


def _item(overall: float | None, levels: dict[str, float | None] | None = None,
          status: str = "passed") -> dict[str, Any]:
    tree: dict[str, float | None] = {"gate": None, **dict.fromkeys(LEVEL_KEYS)}
    tree.update(levels or {})
    return {"status": status, "overall": overall, "tree": tree}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 10, allow_nan=False), min_size=2, max_size=60))
def test_confidence_intervals_lie_within_the_values_and_repeat(values: list[float]) -> None:
    items = [_item(v, {"L3": v / 2}) for v in values]
    found = confidence_intervals(items)
    for metric, scale in (("overall", 1.0), ("L3", 0.5)):
        interval = found[metric]
        assert interval is not None
        low, high = interval
        assert round(min(values) * scale, 4) <= low <= high <= round(max(values) * scale, 4)
    assert found["L0"] is None and found["gate"] is None
    assert confidence_intervals(items) == found


def test_confidence_intervals_of_equal_values_and_of_each_metric_alone() -> None:
    assert confidence_intervals([_item(7.25), _item(7.25), _item(7.25)])["overall"] == [7.25,
                                                                                       7.25]
    assert confidence_intervals([_item(7.0), _item(None)])["overall"] is None
    varied = [_item(float(i % 7), {"L5": float(i % 3)}) for i in range(40)]
    alone = [_item(float(i % 7)) for i in range(40)]
    # Each metric resamples on its own: the others' presence does not move its interval.
    assert confidence_intervals(varied)["overall"] == confidence_intervals(alone)["overall"]
    errors = [*varied, _item(0.0, {"L5": 0.0}, status="error")]
    assert confidence_intervals(errors) == confidence_intervals(varied)


def _previous(items: list[dict[str, Any]], numpy: str = "2.0") -> dict[str, Any]:
    return {"manifest": {"confidence_method": dict(INTERVAL_METHOD),
                         "environment": {"libraries": {"numpy": numpy}}},
            "confidence": confidence_intervals(items), "items": items}


def test_intervals_drawn_from_the_same_values_the_same_way_are_kept() -> None:
    items = [_item(float(i % 7), {"L5": float(i % 3)}) for i in range(40)]
    previous = _previous(items)
    assert kept_intervals(previous, items, "2.0") == previous["confidence"]
    # Other values, another order, another numpy or way of drawing: drawn again.
    assert kept_intervals(previous, [*items[:-1], _item(6.5)], "2.0") is None
    assert kept_intervals(previous, items[::-1], "2.0") is None
    assert kept_intervals(previous, items, "2.1") is None
    other = {**previous, "manifest": {**previous["manifest"],
                                      "confidence_method": {**INTERVAL_METHOD, "draws": 1}}}
    assert kept_intervals(other, items, "2.0") is None
    # Reports of other formats or damaged ones are never trusted.
    assert kept_intervals(None, items, "2.0") is None
    assert kept_intervals({"manifest": {}}, items, "2.0") is None
    assert kept_intervals({**previous, "confidence": {"overall": [1, 2]}}, items, "2.0") is None
    assert kept_intervals({**previous, "items": [{"status": "passed"}]}, items, "2.0") is None
    assert kept_intervals(previous, items, None) is None


def _pairs(before: list[float], after: list[float]) -> tuple[list[dict[str, Any]],
                                                             list[dict[str, Any]]]:
    base = [{"case_id": f"c{i}", "status": "passed", "overall": v} for i, v in enumerate(before)]
    now = [{"case_id": f"c{i}", "status": "passed", "overall": v} for i, v in enumerate(after)]
    return base, now


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(scores, scores), min_size=2, max_size=40))
def test_paired_bootstrap_contains_the_mean_change_and_repeats(
        pairs: list[tuple[float, float]]) -> None:
    base, now = _pairs([a for a, _ in pairs], [b for _, b in pairs])
    ci = paired_bootstrap(base, now, "overall")
    assert ci is not None
    low, high, n = ci
    change = math.fsum(b - a for a, b in pairs) / len(pairs)
    assert n == len(pairs)
    assert low - 1e-9 <= change <= high + 1e-9
    assert paired_bootstrap(base, now, "overall") == ci  # seeded: the same interval every time


def _width(interval: list[float] | tuple[float, float, int] | None) -> float:
    assert interval is not None
    return interval[1] - interval[0]


@settings(max_examples=30, deadline=None)
@given(st.lists(quarters, min_size=2, max_size=30).filter(lambda v: len(set(v)) > 1))
def test_intervals_contain_the_mean_and_narrow_with_more_items(values: list[float]) -> None:
    items = [_item(v) for v in values]
    found = confidence_intervals(items)["overall"]
    assert found is not None
    mean = math.fsum(values) / len(values)
    assert found[0] - 1e-4 <= mean <= found[1] + 1e-4  # the bounds are rounded to 4 places
    # The same spread over four times the cases: the mean can move less.
    more = confidence_intervals(items * 4)["overall"]
    assert _width(more) < _width(found)
    base, now = _pairs([0.0] * len(values), values)
    more_base, more_now = _pairs([0.0] * len(values) * 4, values * 4)
    assert (_width(paired_bootstrap(more_base, more_now, "overall"))
            < _width(paired_bootstrap(base, now, "overall")))
