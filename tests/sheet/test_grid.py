"""The grid on real photographs: gutters, seams, frames and grids of other sizes (sheet/grid.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from PIL import Image

from pytest_imagetime.sheet.metrics import analyze
from tests.photo_sheets import PATHS, PHOTOS, good_sheet, jpeg, measured, three_panel_sheet


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", PHOTOS)
def test_good_sheet_is_a_clean_2x2_grid(name: str, path: str) -> None:
    m = measured(name, path, "good")
    assert (m.h_gutter, m.v_gutter) == (True, True)
    assert (m.grid_rows, m.grid_cols) == (2, 2)
    assert m.h_offset < 0.01 and m.v_offset < 0.01
    assert m.aspect_ratio == 1.0
    assert m.blank_panels == 0 and m.panel_balance > 0.95
    assert m.order_fraction >= 0.875
    assert min(m.anchors) > 0.75
    assert m.implied_labels() == ()


@pytest.mark.parametrize("name", ["astronaut", "coffee", "rocket", "camera", "motorcycle"])
def test_gutterless_sheet_is_cut_at_its_seams(name: str) -> None:
    m = analyze(good_sheet(name, "zoom-in", gutter=0))
    assert (m.h_gutter, m.v_gutter) == (False, False)
    assert (m.h_seam, m.v_seam) == (True, True)
    assert min(m.h_seam_coverage, m.v_seam_coverage) >= 0.5
    assert m.implied_labels() == ()


@pytest.mark.parametrize("variant", ["black-gutters", "framed", "jpeg", "1024-thin-jpeg",
                                     "non-square", "grey", "rgba"])
@pytest.mark.parametrize("name", ["astronaut", "coffee", "immunohistochemistry"])
def test_good_sheet_variants_stay_silent(name: str, variant: str) -> None:
    build: dict[str, Callable[[], Image.Image]] = {
        "black-gutters": lambda: good_sheet(name, "pan-diagonal", background=(0, 0, 0)),
        "framed": lambda: good_sheet(name, "pan-diagonal", size=768, gutter=24, margin=20),
        "jpeg": lambda: jpeg(good_sheet(name, "pan-diagonal"), 60),
        "1024-thin-jpeg": lambda: jpeg(good_sheet(name, "pan-diagonal", 1024, gutter=2), 70),
        "non-square": lambda: good_sheet(name, "pan-diagonal").resize((768, 512)),
        "grey": lambda: good_sheet(name, "pan-diagonal").convert("L"),
        "rgba": lambda: good_sheet(name, "pan-diagonal").convert("RGBA"),
    }
    m = analyze(build[variant]())
    assert (m.h_gutter, m.v_gutter) == (True, True)
    assert m.panel_balance > 0.9
    assert m.implied_labels() == ()


def test_frame_margins_are_cut_from_the_panels() -> None:
    m = analyze(good_sheet("astronaut", "pan-right", size=768, gutter=24, margin=40))
    assert m.panel_min_side >= (768 - 2 * 40 - 24) // 2 - 2
    assert m.panel_balance > 0.98


def test_non_square_sheet_reports_its_aspect_ratio() -> None:
    m = analyze(good_sheet("coffee", "pan-right").resize((768, 512)))
    assert m.aspect_ratio == pytest.approx(1.5)
    assert (m.width, m.height) == (768, 512)
    assert (m.grid_rows, m.grid_cols) == (2, 2)


@pytest.mark.parametrize("name", PHOTOS)
def test_three_columns_are_not_a_2x2_sheet(name: str) -> None:
    m = analyze(three_panel_sheet(name))
    assert (m.grid_rows, m.grid_cols) == (1, 3)
    assert m.implied_labels() == ("not_2x2_sheet",)
