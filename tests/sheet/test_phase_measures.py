"""Change between panels measured directly: copy test, distances, order, trajectory,
histogram overlap and shifted correlation (sheet/phases.py)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.typing import NDArray
from PIL import Image

from pytest_imagetime.sheet.filters import Array
from pytest_imagetime.sheet.grid import Region
from pytest_imagetime.sheet.panels import read_panels
from pytest_imagetime.sheet.phases import (
    NCC_MAX_SHIFT,
    PAIRS,
    distance_matrix,
    histogram_overlap,
    order_fraction,
    phase_change,
    shifted_correlations,
    trajectory_order,
)

BOXES: list[Region] = [(0.0, 0.0, 256.0, 256.0), (256.0, 0.0, 512.0, 256.0)]


def _textured(seed: int, size: int = 256) -> NDArray[np.uint8]:
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 255, (size // 16, size // 16, 3), dtype=np.uint8)
    pixels: NDArray[np.uint8] = np.kron(coarse, np.ones((16, 16, 1), dtype=np.uint8))
    return pixels


def _change(left: NDArray[np.uint8], right: NDArray[np.uint8]) -> float:
    sheet = Image.fromarray(np.concatenate([left, right], axis=1))
    first, second = read_panels(sheet, BOXES)
    return phase_change(sheet, first, second, BOXES[0], BOXES[1])


def test_a_copied_panel_does_not_change() -> None:
    panel = _textured(0)
    assert _change(panel, panel) == pytest.approx(0.0, abs=1e-9)


def test_a_copy_pasted_a_pixel_off_is_still_a_copy() -> None:
    panel = _textured(1)
    assert _change(panel, np.roll(panel, 1, axis=1)) < 0.01


def test_another_picture_is_a_change() -> None:
    assert _change(_textured(2), _textured(3)) > 0.2


def test_a_small_moving_subject_is_a_change() -> None:
    background = np.full((256, 256, 3), 60, dtype=np.uint8)
    moved = background.copy()
    moved[20:52, 20:52] = 250  # one block of the 16x16 grid
    assert _change(background, moved) > 0.3


def test_distance_matrix_is_symmetric_with_a_zero_diagonal() -> None:
    thumbs = [np.full((2, 2, 3), level) for level in (0.0, 0.25, 1.0)]
    dist = distance_matrix(thumbs)
    np.testing.assert_allclose(dist, [[0, 0.25, 1], [0.25, 0, 0.75], [1, 0.75, 0]])


def test_order_fraction_is_one_for_a_steady_progression() -> None:
    thumbs = [np.full((2, 2, 3), level) for level in (0.0, 0.3, 0.6, 0.9)]
    assert order_fraction(distance_matrix(thumbs)) == 1.0


def test_order_fraction_drops_when_the_last_panel_returns_to_the_first() -> None:
    thumbs = [np.full((2, 2, 3), level) for level in (0.0, 0.5, 1.0, 0.0)]
    assert order_fraction(distance_matrix(thumbs)) < 1.0


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, (4, 3, 3, 3), elements=st.floats(0, 1)))
def test_order_fraction_is_a_share(stack: NDArray[np.float64]) -> None:
    fraction = order_fraction(distance_matrix(list(stack)))
    assert 0.0 <= fraction <= 1.0
    assert fraction * 8 == pytest.approx(round(fraction * 8))  # 4 triples, 2 conditions each


def _subject_at(positions: list[tuple[int, int]]) -> list[Array]:
    thumbs: list[Array] = []
    for y, x in positions:
        thumb = np.full((48, 48, 3), 0.2)
        thumb[y:y + 6, x:x + 6] = 0.9
        thumbs.append(thumb)
    return thumbs


def test_a_subject_moving_one_way_is_in_order() -> None:
    assert trajectory_order(_subject_at([(20, 4), (20, 14), (20, 24), (20, 34)])) == 1.0


def test_a_subject_going_back_and_forth_is_out_of_order() -> None:
    order = trajectory_order(_subject_at([(20, 4), (20, 34), (20, 14), (20, 24)]))
    assert order is not None and order < 1.0


def test_no_trajectory_when_nothing_moves() -> None:
    assert trajectory_order(_subject_at([(20, 20)] * 4)) is None


def test_no_trajectory_when_the_whole_scene_changes() -> None:
    rng = np.random.default_rng(0)
    scenes: list[Array] = [rng.random((48, 48, 3)) for _ in range(4)]
    assert trajectory_order(scenes) is None


def test_histogram_overlap_is_one_for_equal_and_zero_for_disjoint() -> None:
    p = np.array([0.5, 0.5, 0.0, 0.0])
    assert histogram_overlap(p, p) == 1.0
    assert histogram_overlap(p, np.array([0.0, 0.0, 0.25, 0.75])) == 0.0
    assert histogram_overlap(p, np.array([0.25, 0.0, 0.75, 0.0])) == 0.25


def _layout(seed: int) -> NDArray[np.float32]:
    layout: NDArray[np.float32] = np.random.default_rng(seed).random((40, 40)).astype(
        np.float32)
    return layout


def test_equal_layouts_correlate_fully_and_unrelated_ones_weakly() -> None:
    a, b = _layout(0), _layout(1)
    same, other = shifted_correlations([a, a, b, b], ((0, 1), (1, 2)))
    assert same == pytest.approx(1.0, abs=1e-6)
    assert other < 0.5


def test_a_shifted_layout_is_found_within_the_shift_range() -> None:
    a = _layout(2)
    shifted = np.roll(a, NCC_MAX_SHIFT // 2, axis=1)
    (best,) = shifted_correlations([a, shifted], ((0, 1),))
    assert best == pytest.approx(1.0, abs=1e-6)


def test_flat_layouts_correlate_with_nothing() -> None:
    flat = np.full((40, 40), 0.5, dtype=np.float32)
    scores = shifted_correlations([flat, flat, _layout(3), flat], PAIRS)
    assert scores == [0.0, 0.0, 0.0]
