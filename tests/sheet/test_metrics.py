"""The SheetMetrics contract: JSON primitives, determinism, the rubric's labels
(sheet/metrics.py)."""

from __future__ import annotations

import json
from dataclasses import fields

from pytest_imagetime.rubric.facts import FAILURE_LABELS
from pytest_imagetime.sheet.metrics import SheetMetrics, analyze
from tests.photo_sheets import blank_sheet, copied_sheet, good_metrics, good_sheet, panorama_sheet


def test_to_json_holds_every_field_as_a_json_primitive() -> None:
    m = good_metrics()[0]
    data = m.to_json()
    assert list(data) == [f.name for f in fields(SheetMetrics)]
    assert all(v is None or type(v) in (int, float, bool) for v in data.values())
    assert json.loads(json.dumps(data)) == data


def test_analysis_is_deterministic() -> None:
    sheet = good_sheet("chelsea", "zoom-out")
    first, second = analyze(sheet), analyze(sheet.copy())
    assert first == second
    assert first.to_json() == second.to_json()


def test_labels_come_from_the_rubric_vocabulary() -> None:
    sheets = [blank_sheet(), panorama_sheet("coffee"), copied_sheet("coffee", "zoom-in")]
    for sheet in sheets:
        assert set(analyze(sheet).implied_labels()) <= set(FAILURE_LABELS)
