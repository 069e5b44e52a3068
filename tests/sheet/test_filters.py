"""Any image mode and shape goes through the filters (sheet/filters.py)."""

from __future__ import annotations

import pytest
from PIL import Image

from pytest_imagetime.rubric.facts import FAILURE_LABELS
from pytest_imagetime.sheet.metrics import analyze
from tests.photo_sheets import good_sheet, photo


@pytest.mark.parametrize("mode", ["L", "LA", "RGBA", "P", "PA", "1", "I", "I;16", "F", "CMYK",
                                  "YCbCr", "HSV"])
def test_any_image_mode_is_accepted(mode: str) -> None:
    source = good_sheet("astronaut", "pan-right", size=256)
    image = source.convert("L").convert(mode) if mode in ("I;16", "I", "F") else \
        source.convert(mode)
    m = analyze(image)
    assert m.width == 256 and m.height == 256
    assert set(m.implied_labels()) <= set(FAILURE_LABELS)


def test_transparent_pixels_count_as_white() -> None:
    rgba = Image.new("RGBA", (256, 256), (10, 200, 30, 0))
    m = analyze(rgba)
    assert m.blank_panels == 4
    assert min(m.contrasts) == 0.0


@pytest.mark.parametrize("size", [(1, 1), (2, 2), (5, 7), (16, 16), (32, 32), (300, 20),
                                  (20, 300), (4096, 64)])
def test_tiny_and_extreme_shapes_do_not_crash(size: tuple[int, int]) -> None:
    image = photo("astronaut").resize(size)
    m = analyze(image)
    assert (m.width, m.height) == size
    assert "not_2x2_sheet" in m.implied_labels() or min(size) >= 64
