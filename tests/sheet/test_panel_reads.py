"""Each panel's renderings and statistics, read from its box of a drawn sheet
(sheet/panels.py)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from pytest_imagetime.sheet.panels import (
    DISTANCE_SIZE,
    HIST_BINS,
    MOTION_SIZE,
    NCC_SIZE,
    READ_SIZE,
    read_panels,
    render,
)

# Panels larger than READ_SIZE are area-averaged, so no colour bleeds over from a neighbour.
QUARTERS = [(0.0, 0.0, 256.0, 256.0), (256.0, 0.0, 512.0, 256.0), (0.0, 256.0, 256.0, 512.0),
            (256.0, 256.0, 512.0, 512.0)]
COLOURS = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)]


def _quarters_sheet() -> Image.Image:
    sheet = Image.new("RGB", (512, 512))
    for box, colour in zip(QUARTERS, COLOURS, strict=True):
        left, top, right, bottom = (int(v) for v in box)
        sheet.paste(colour, (left, top, right, bottom))
    return sheet


def test_render_is_read_size_and_takes_the_box() -> None:
    sheet = _quarters_sheet()
    for box, colour in zip(QUARTERS, COLOURS, strict=True):
        panel = render(sheet, box)
        assert panel.size == (READ_SIZE, READ_SIZE)
        assert panel.getpixel((64, 64)) == colour


def test_render_enlarges_a_small_box_smoothly() -> None:
    sheet = np.zeros((8, 16, 3), dtype=np.uint8)
    sheet[:, 8:] = 255
    panel = np.asarray(render(Image.fromarray(sheet), (4.0, 0.0, 12.0, 8.0)))[..., 0]
    assert panel.shape == (READ_SIZE, READ_SIZE)
    assert panel[0, 0] == 0 and panel[0, -1] == 255
    assert 0 < panel[0, READ_SIZE // 2] < 255  # bilinear: a ramp at the edge, not a step


def test_render_shrinks_a_large_box_by_area_average() -> None:
    stripes = np.zeros((512, 512, 3), dtype=np.uint8)
    stripes[:, ::2] = 255  # one-pixel stripes average to mid-grey
    panel = np.asarray(render(Image.fromarray(stripes), (0.0, 0.0, 512.0, 512.0)))
    assert np.abs(panel.astype(int) - 128).max() <= 1


def test_flat_panels_have_their_colour_in_every_rendering() -> None:
    panels = read_panels(_quarters_sheet(), QUARTERS)
    assert len(panels) == 4
    red = panels[0]
    assert red.colour.shape == (DISTANCE_SIZE, DISTANCE_SIZE, 3)
    assert red.motion.shape == (MOTION_SIZE, MOTION_SIZE, 3)
    assert red.layout.shape == (NCC_SIZE, NCC_SIZE) and red.layout.dtype == np.float32
    assert red.detail.shape == (READ_SIZE, READ_SIZE)
    np.testing.assert_allclose(red.colour[5, 5], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(panels[2].motion[0, 0], [0.0, 0.0, 1.0])
    assert int(panels[3].detail[3, 3]) == 9 * 255  # white: 3x3 sums of 255


def test_flat_panels_have_no_contrast_and_no_detail() -> None:
    for panel in read_panels(_quarters_sheet(), QUARTERS):
        assert panel.contrast == 0.0 and panel.detail_ratio == 0.0


def test_the_histogram_is_a_distribution_with_one_bin_per_flat_colour() -> None:
    panels = read_panels(_quarters_sheet(), QUARTERS)
    bins = [int(np.argmax(panel.histogram)) for panel in panels]
    top = HIST_BINS - 1
    assert bins == [top * HIST_BINS ** 2, top * HIST_BINS, top, HIST_BINS ** 3 - 1]
    for panel in panels:
        assert panel.histogram.shape == (HIST_BINS ** 3,)
        assert panel.histogram.sum() == pytest.approx(1.0)
        assert panel.histogram.max() == pytest.approx(1.0)


def test_a_textured_panel_has_contrast_and_detail() -> None:
    noise = np.random.default_rng(0).integers(0, 255, (128, 128, 3), dtype=np.uint8)
    checks = np.indices((128, 128)).sum(axis=0) % 2 * 255
    flat = np.full((128, 128, 3), 128, dtype=np.uint8)
    sheet = np.concatenate([noise, np.repeat(checks[..., None], 3, axis=2).astype(np.uint8),
                            flat], axis=1)
    boxes = [(0.0, 0.0, 128.0, 128.0), (128.0, 0.0, 256.0, 128.0), (256.0, 0.0, 384.0, 128.0)]
    noisy, checked, plain = read_panels(Image.fromarray(sheet), boxes)
    assert noisy.contrast > 0.1 and checked.contrast == pytest.approx(0.5, abs=0.01)
    assert plain.contrast == 0.0
    assert checked.detail_ratio > noisy.detail_ratio > plain.detail_ratio


def test_no_boxes_read_no_panels() -> None:
    with pytest.raises(ValueError, match="need at least one array"):
        read_panels(_quarters_sheet(), [])
