"""The image filters one by one against numpy's own formulas (sheet/filters.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

from pytest_imagetime.sheet.filters import (
    LINE_MAX,
    LINE_POSITIONS,
    MIN_SIDE,
    as_rgb,
    box_blur,
    box_sums,
    channel_sum,
    enlarged,
    grey_std,
    laplacian_variance,
    line_planes,
    median_of_four,
    row_medians,
    smoothed,
    square_thumbnail,
    thumbnail_stack,
    unit,
)

greys = arrays(np.uint8, st.tuples(st.integers(3, 12), st.integers(3, 12)))


def test_enlarged_keeps_large_images_and_grows_tiny_ones() -> None:
    big = Image.new("RGB", (MIN_SIDE, 20))
    assert enlarged(big) is big
    assert enlarged(Image.new("RGB", (2, 30))).size == (MIN_SIDE, 30)
    assert enlarged(Image.new("RGB", (1, 1))).size == (MIN_SIDE, MIN_SIDE)


def test_as_rgb_returns_an_rgb_image_unchanged_and_composites_alpha_on_white() -> None:
    rgb = Image.new("RGB", (4, 4), (1, 2, 3))
    assert as_rgb(rgb) is rgb
    clear = as_rgb(Image.new("RGBA", (4, 4), (10, 20, 30, 0)))
    assert clear.mode == "RGB" and clear.getpixel((0, 0)) == (255, 255, 255)
    opaque = as_rgb(Image.new("LA", (4, 4), (100, 255)))
    assert opaque.getpixel((0, 0)) == (100, 100, 100)


@pytest.mark.parametrize(("mode", "value", "expected"), [
    ("F", 1.0, 255),  # floats in [0, 1]
    ("F", 0.5, 127),
    ("I", 255, 255),  # 8-bit range stored wide
    ("I;16", 65535, 255),  # full 16-bit range
    ("I;16", 32768, 127),
])
def test_wide_modes_are_scaled_by_their_evident_range(mode: str, value: float,
                                                      expected: int) -> None:
    image = Image.new(mode, (4, 4), value)
    assert as_rgb(image).getpixel((0, 0)) == (expected, expected, expected)


def test_palette_with_transparency_shows_white() -> None:
    image = Image.new("P", (4, 4), 0)
    image.putpalette([200, 0, 0] * 256)
    image.info["transparency"] = 0
    assert as_rgb(image).getpixel((1, 1)) == (255, 255, 255)


def test_line_planes_shapes_for_rows_and_columns() -> None:
    rgb = Image.new("RGB", (300, 40), (10, 20, 30))
    rows = line_planes(rgb, across_rows=True)
    cols = line_planes(rgb, across_rows=False)
    assert rows.dtype == np.uint8
    assert rows.shape == (3, 40, LINE_POSITIONS)
    assert cols.shape == (3, 300, 40)
    assert set(np.unique(rows[0])) == {10} and set(np.unique(cols[2])) == {30}


def test_line_planes_cap_the_lines_and_keep_a_minimum() -> None:
    tall = Image.new("RGB", (4, LINE_MAX + 200))
    assert line_planes(tall, across_rows=True).shape == (3, LINE_MAX, MIN_SIDE)


def test_line_planes_keep_a_row_pattern_on_its_own_line() -> None:
    pixels = np.zeros((16, 16, 3), dtype=np.uint8)
    pixels[5] = 255  # one white row
    planes = line_planes(Image.fromarray(pixels), across_rows=True)
    assert planes[:, 5].min() == 255 and planes[:, 4].max() == 0
    columns = line_planes(Image.fromarray(pixels), across_rows=False)
    assert (columns[:, :, 5] == 255).all()


def test_unit_scales_to_float32_and_writes_into_out() -> None:
    values = np.array([[0, 51, 255]], dtype=np.uint8)
    out = np.empty((1, 3), dtype=np.float32)
    result = unit(values, out=out)
    assert result is out and result.dtype == np.float32
    np.testing.assert_allclose(result, [[0.0, 0.2, 1.0]], rtol=1e-6)


def test_smoothed_is_the_three_position_mean() -> None:
    lines = np.array([[0.0, 3.0, 6.0, 9.0]], dtype=np.float32)
    np.testing.assert_allclose(smoothed(lines), [[3.0, 6.0]])


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 9)),
              elements=st.floats(-1e6, 1e6)))
def test_row_medians_match_numpy(values: np.ndarray) -> None:
    np.testing.assert_array_equal(row_medians(values), np.median(values, axis=1))


def test_square_thumbnail_keeps_a_square_of_the_size_and_averages_otherwise() -> None:
    square = Image.new("RGB", (8, 8))
    assert square_thumbnail(square, 8) is square
    halves = np.zeros((4, 8, 3), dtype=np.uint8)
    halves[:, 4:] = 200
    small = square_thumbnail(Image.fromarray(halves), 2)
    assert small.size == (2, 2)
    assert np.asarray(small)[0, :, 0].tolist() == [0, 200]


def test_thumbnail_stack_is_floats_in_unit_range() -> None:
    stack = thumbnail_stack([Image.new("RGB", (10, 10), (255, 0, 51))] * 3, 4)
    assert stack.shape == (3, 4, 4, 3)
    np.testing.assert_allclose(stack[2, 0, 0], [1.0, 0.0, 0.2])


def _blur_reference(image: np.ndarray) -> np.ndarray:
    padded = np.pad(image, ((1, 1), (1, 1)), mode="edge").astype(np.float64)
    h, w = image.shape
    total = np.zeros((h, w))
    for dy in range(3):
        for dx in range(3):
            total += padded[dy:dy + h, dx:dx + w]
    return total / 9.0


@settings(max_examples=50, deadline=None)
@given(greys)
def test_box_sums_are_nine_times_the_edge_replicated_mean(grey: np.ndarray) -> None:
    sums = box_sums(grey)
    assert sums.dtype == np.int16 and sums.shape == grey.shape
    np.testing.assert_allclose(sums / 9.0, _blur_reference(grey), atol=1e-9)


@settings(max_examples=50, deadline=None)
@given(greys)
def test_box_blur_matches_the_reference_on_each_image(grey: np.ndarray) -> None:
    stack = np.stack([grey, 255 - grey]).astype(np.float64) / 255.0
    blurred = box_blur(stack)
    np.testing.assert_allclose(blurred[0], _blur_reference(grey) / 255.0, atol=1e-12)
    np.testing.assert_allclose(blurred[1], _blur_reference(255 - grey) / 255.0, atol=1e-12)


def test_box_blur_keeps_a_flat_image_flat_and_blurs_colour_channels() -> None:
    flat = np.full((1, 5, 5, 3), 0.25)
    np.testing.assert_allclose(box_blur(flat), flat)


@settings(max_examples=50, deadline=None)
@given(greys)
def test_grey_std_matches_numpy(grey: np.ndarray) -> None:
    assert grey_std(grey) == pytest.approx(float((grey / 255.0).std()), abs=1e-12)


@settings(max_examples=50, deadline=None)
@given(greys)
def test_laplacian_variance_matches_numpy(grey: np.ndarray) -> None:
    g = grey / 255.0
    lap = 4 * g[1:-1, 1:-1] - g[:-2, 1:-1] - g[2:, 1:-1] - g[1:-1, :-2] - g[1:-1, 2:]
    assert laplacian_variance(grey) == pytest.approx(float(lap.var()), abs=1e-12)


def test_flat_grey_has_no_spread_and_no_detail() -> None:
    flat = np.full((6, 6), 77, dtype=np.uint8)
    assert grey_std(flat) == 0.0
    assert laplacian_variance(flat) == 0.0


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 4), st.just(3)),
              elements=st.floats(0, 1)))
def test_channel_sum_is_exactly_numpys_sum(rgb: np.ndarray) -> None:
    np.testing.assert_array_equal(channel_sum(rgb), rgb.sum(axis=-1))


@settings(max_examples=80, deadline=None)
@given(arrays(np.float64, (4, 3, 2), elements=st.floats(-1e3, 1e3)))
def test_median_of_four_matches_numpy(layers: np.ndarray) -> None:
    np.testing.assert_allclose(median_of_four(list(layers)), np.median(layers, axis=0),
                               rtol=0, atol=1e-9)
