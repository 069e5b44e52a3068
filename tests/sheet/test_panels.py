"""Per-panel measures: blank and unreadable panels (sheet/panels.py)."""

from __future__ import annotations

import pytest

from pytest_imagetime.sheet.metrics import analyze
from tests.photo_sheets import PHOTOS, WHITE, blank_sheet, good_sheet, measured


@pytest.mark.parametrize("colour", [WHITE, (0, 0, 0), (128, 128, 128)])
def test_blank_sheet_is_not_a_2x2_sheet(colour: tuple[int, int, int]) -> None:
    m = analyze(blank_sheet(colour))
    assert m.blank_panels == 4
    assert m.implied_labels() == ("not_2x2_sheet",)


@pytest.mark.parametrize("name", PHOTOS)
def test_a_blank_panel_makes_the_sheet_unusable(name: str) -> None:
    m = measured(name, "pan-right", "blank-panel")
    assert m.blank_panels == 1
    assert m.contrast_3 < 0.02
    assert m.implied_labels() == ("not_2x2_sheet",)


def test_tiny_sheet_has_unreadable_panels() -> None:
    m = analyze(good_sheet("astronaut", "pan-right").resize((32, 32)))
    assert m.panel_min_side < 32
    assert m.implied_labels() == ("not_2x2_sheet",)
