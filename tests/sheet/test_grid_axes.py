"""One axis of a sheet at a time on drawn patterns, and the panel boxes cut from it
(sheet/grid.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from PIL import Image

from pytest_imagetime.sheet.filters import line_planes
from pytest_imagetime.sheet.grid import (
    PANEL_INSET,
    AxisStructure,
    axis_structure,
    inset,
    panel_boxes,
)

Pixels = NDArray[np.uint8]


def _noise(height: int, width: int, low: int = 0, high: int = 255, seed: int = 0) -> Pixels:
    pixels: Pixels = np.random.default_rng(seed).integers(low, high, (height, width, 3),
                                                          dtype=np.uint8)
    return pixels


def _rows(pixels: Pixels) -> AxisStructure:
    return axis_structure(line_planes(Image.fromarray(pixels), across_rows=True))


def _axis(cut: tuple[float, float] = (0.5, 0.5),
          margins: tuple[float, float] = (0.0, 0.0)) -> AxisStructure:
    return AxisStructure(gutter=cut[0] != cut[1], seam=cut[0] == cut[1], seam_strength=0.0,
                         seam_coverage=0.0, offset=0.0, inner_separators=1, panels=2, cut=cut,
                         margins=margins)


def test_a_white_band_in_the_middle_is_a_gutter_cut_out_of_the_axis() -> None:
    pixels = _noise(256, 256)
    pixels[124:132] = 255
    axis = _rows(pixels)
    assert axis.gutter and not axis.seam
    assert axis.cut == (124 / 256, 132 / 256)
    assert axis.offset == 0.0 and axis.panels == 2 and axis.inner_separators == 1
    assert axis.margins == (0.0, 0.0)


def test_the_same_band_across_columns_is_found_on_the_transposed_axis() -> None:
    pixels = _noise(256, 256, seed=1)
    pixels[:, 124:132] = 255
    columns = axis_structure(line_planes(Image.fromarray(pixels), across_rows=False))
    assert columns.gutter and columns.cut == (124 / 256, 132 / 256)
    assert not _rows(pixels).gutter


def test_a_frame_in_the_gutter_colour_is_a_margin() -> None:
    pixels = _noise(256, 256, seed=2)
    pixels[:10] = pixels[-10:] = pixels[124:132] = 255
    axis = _rows(pixels)
    assert axis.gutter and axis.margins == (10 / 256, 10 / 256)


def test_a_step_between_two_halves_without_a_band_is_a_seam() -> None:
    pixels = np.concatenate([_noise(128, 256, 0, 80), _noise(128, 256, 170, 255, seed=3)])
    axis = _rows(pixels)
    assert axis.seam and not axis.gutter
    assert axis.seam_coverage == 1.0 and axis.seam_strength >= 2.0
    assert axis.cut[0] == axis.cut[1] and abs(axis.cut[0] - 0.5) < 0.01
    assert axis.panels == 2


def test_plain_noise_has_no_separator_and_one_panel() -> None:
    axis = _rows(_noise(256, 256, seed=4))
    assert not axis.gutter and not axis.seam
    assert axis.cut == (0.5, 0.5) and axis.offset == 0.0
    assert axis.panels == 1 and axis.inner_separators == 0


def test_a_blank_image_is_one_panel_cut_at_the_middle() -> None:
    axis = _rows(np.full((64, 64, 3), 128, dtype=np.uint8))
    assert not axis.gutter and not axis.seam and axis.panels == 1
    assert axis.cut == (0.5, 0.5) and axis.seam_strength == 0.0


def test_gutters_at_the_thirds_make_three_panels() -> None:
    pixels = _noise(300, 256, seed=5)
    pixels[96:104] = pixels[196:204] = 255
    axis = _rows(pixels)
    assert axis.panels == 3 and axis.inner_separators == 2
    assert not axis.gutter  # no band at the middle: the 2x2 cut stays there


def test_a_band_away_from_the_middle_is_no_middle_gutter() -> None:
    pixels = _noise(256, 256, seed=6)
    pixels[40:48] = 255
    axis = _rows(pixels)
    assert not axis.gutter and axis.cut == (0.5, 0.5)


def test_panel_boxes_cut_the_gutters_away_in_reading_order() -> None:
    rows = _axis(cut=(0.45, 0.55))
    cols = _axis(cut=(0.4, 0.5))
    boxes = panel_boxes(200, 100, rows, cols)
    expected = [(0, 0, 80, 45), (100, 0, 200, 45), (0, 55, 80, 100), (100, 55, 200, 100)]
    assert [pytest.approx(box) for box in boxes] == expected


def test_panel_boxes_leave_the_margins_out() -> None:
    axis = _axis(cut=(0.5, 0.5), margins=(0.1, 0.2))
    boxes = panel_boxes(100, 100, axis, axis)
    assert boxes[0] == (10.0, 10.0, 50.0, 50.0)
    assert boxes[3] == (50.0, 50.0, 80.0, 80.0)


def test_margins_that_do_not_surround_the_cut_are_ignored() -> None:
    axis = _axis(cut=(0.5, 0.5), margins=(0.6, 0.0))
    assert panel_boxes(100, 100, axis, axis)[0] == (0.0, 0.0, 50.0, 50.0)


def test_a_cut_at_the_edge_never_makes_an_empty_panel() -> None:
    axis = _axis(cut=(0.0, 0.0))
    boxes = panel_boxes(1, 1, axis, axis)
    for left, top, right, bottom in boxes:
        assert right > left and bottom > top


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4000), st.integers(1, 4000), st.floats(0, 1), st.floats(0, 0.2),
       st.floats(0, 0.3), st.floats(0, 0.3))
def test_panel_boxes_stay_inside_the_sheet_and_are_never_empty(
        width: int, height: int, cut: float, thickness: float, before: float,
        after: float) -> None:
    axis = _axis(cut=(cut, min(1.0, cut + thickness)), margins=(before, after))
    boxes = panel_boxes(width, height, axis, axis)
    assert len(boxes) == 4
    for left, top, right, bottom in boxes:
        assert 0 <= left < right <= width and 0 <= top < bottom <= height


def test_inset_trims_each_side_by_its_share() -> None:
    left, top, right, bottom = inset((0.0, 100.0, 200.0, 200.0))
    assert left == pytest.approx(200 * PANEL_INSET)
    assert right == pytest.approx(200 * (1 - PANEL_INSET))
    assert top == pytest.approx(100 + 100 * PANEL_INSET)
    assert bottom == pytest.approx(200 - 100 * PANEL_INSET)
