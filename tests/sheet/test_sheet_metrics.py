"""Pixel metrics on real photographs: good sheets stay silent, each broken kind is named.

Sheets are built from scikit-image's bundled photographs (no download): a good sheet is four
crops of one photograph along a pan or zoom path, composed with thin white gutters; broken
sheets copy, shuffle, mix, merge or blank those panels.
"""

from __future__ import annotations

import functools
import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
import pytest
from PIL import Image
from skimage import data as skimage_data  # the test extra; photos ship in the package

from pytest_imagetime.rubric.facts import FAILURE_LABELS
from pytest_imagetime.sheet.geometry import compose, gutter_width
from pytest_imagetime.sheet.metrics import SheetMetrics, analyze

SIZE = 512
# Photographs with structure at every scale. Periodic textures (coins) and near-empty scenes
# (a star field, the moon) carry no order evidence; docs/pixel-judge.md lists that limit.
PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "camera",
          "motorcycle")


@dataclass(frozen=True)
class CropPath:
    """A square window moving over a photograph from t1 to t4 (fractions of the photo)."""

    x: float
    y: float
    side: float  # of the photo's shorter side
    dx: float
    dy: float
    zoom: float  # side factor per step

    def crops(self, photo: Image.Image) -> list[Image.Image]:
        w, h = photo.size
        short = min(w, h)
        out = []
        for t in range(4):
            side = self.side * self.zoom ** t * short
            left, top = (self.x + self.dx * t) * w, (self.y + self.dy * t) * h
            out.append(photo.crop((round(left), round(top), round(left + side),
                                   round(top + side))))
        return out


PATHS = {
    "pan-right": CropPath(0.15, 0.2, 0.6, 0.07, 0.0, 1.0),
    "pan-diagonal": CropPath(0.15, 0.15, 0.6, 0.06, 0.05, 1.0),
    "zoom-in": CropPath(0.1, 0.1, 0.8, 0.03, 0.03, 0.88),
    "zoom-out": CropPath(0.25, 0.25, 0.5, -0.04, -0.02, 1.12),
}
WHITE = (255, 255, 255)


@functools.cache
def photo(name: str) -> Image.Image:
    if name == "motorcycle":
        pixels = skimage_data.stereo_motorcycle()[0]  # type: ignore[no-untyped-call]
    else:
        pixels = getattr(skimage_data, name)()
    return Image.fromarray(np.asarray(pixels)).convert("RGB")


# ---------------------------------------------------------------- sheet builders


def good_sheet(name: str, path: str, size: int = SIZE, gutter: int | None = None,
               background: tuple[int, int, int] = WHITE, margin: int = 0) -> Image.Image:
    return compose(PATHS[path].crops(photo(name)), size, gutter, background, margin)


def copied_sheet(name: str, path: str, size: int = SIZE) -> Image.Image:
    first = PATHS[path].crops(photo(name))[0]
    return compose([first] * 4, size)


def shuffled_sheet(name: str, path: str) -> Image.Image:
    t1, t2, t3, t4 = PATHS[path].crops(photo(name))
    return compose([t3, t1, t4, t2], SIZE)


def unrelated_sheet(names: tuple[str, str, str, str]) -> Image.Image:
    return compose([_centre_square(photo(n)) for n in names], SIZE)


def panorama_sheet(name: str) -> Image.Image:
    """The photograph itself, resized: no gutters, one continuous picture."""
    return photo(name).resize((SIZE, SIZE), Image.Resampling.LANCZOS)


def three_panel_sheet(name: str) -> Image.Image:
    """Three full-height columns with white gutters."""
    g = gutter_width(SIZE)
    width = (SIZE - 2 * g) // 3
    sheet = Image.new("RGB", (SIZE, SIZE), WHITE)
    source = photo(name)
    w, h = source.size
    for i in range(3):
        left = int((0.1 + 0.08 * i) * w)
        strip = source.crop((left, 0, left + int(0.3 * w), h)).resize((width, SIZE))
        sheet.paste(strip, (i * (width + g), 0))
    return sheet


def blank_sheet(colour: tuple[int, int, int] = WHITE) -> Image.Image:
    return Image.new("RGB", (SIZE, SIZE), colour)


def blank_panel_sheet(name: str, path: str) -> Image.Image:
    crops = PATHS[path].crops(photo(name))
    crops[2] = Image.new("RGB", (64, 64), WHITE)
    return compose(crops, SIZE)


def moving_subject_sheet(background: str, subject: str, size: float,
                         step: float) -> Image.Image:
    """A fixed scene with a subject (size and step as fractions of the panel) moving right."""
    scene = _centre_square(photo(background))
    side = scene.width
    thing = _centre_square(photo(subject)).resize((int(size * side), int(size * side)))
    panels = []
    for t in range(4):
        panel = scene.copy()
        panel.paste(thing, (int((0.15 + step * t) * side), int(0.4 * side)))
        panels.append(panel)
    return compose(panels, SIZE)


def _centre_square(image: Image.Image) -> Image.Image:
    w, h = image.size
    s = min(w, h)
    return image.crop(((w - s) // 2, (h - s) // 2, (w - s) // 2 + s, (h - s) // 2 + s))


def jpeg(image: Image.Image, quality: int) -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    buffer.seek(0)
    return Image.open(buffer).convert("RGB")


UNRELATED = (("astronaut", "coffee", "rocket", "camera"),
             ("chelsea", "immunohistochemistry", "motorcycle", "coffee"),
             ("rocket", "astronaut", "immunohistochemistry", "chelsea"))

# Every broken kind: a name, the sheets, and the label the pixels must give.
BrokenKind = tuple[str, Callable[[], list[Image.Image]], str | None]


def broken_kinds() -> list[BrokenKind]:
    pairs = [(n, p) for n in PHOTOS for p in ("pan-right", "zoom-in")]
    return [
        ("copied", lambda: [copied_sheet(n, p) for n, p in pairs], "copied_phases"),
        ("unrelated", lambda: [unrelated_sheet(names) for names in UNRELATED],
         "panorama_or_collage"),
        ("panorama", lambda: [panorama_sheet(n) for n in PHOTOS], "panorama_or_collage"),
        ("shuffled", lambda: [shuffled_sheet(n, p) for n, p in pairs], None),
        ("three-panels", lambda: [three_panel_sheet(n) for n in PHOTOS], "not_2x2_sheet"),
        ("blank", lambda: [blank_sheet(), blank_sheet((128, 128, 128))], "not_2x2_sheet"),
        ("blank-panel", lambda: [blank_panel_sheet(n, p) for n, p in pairs], "not_2x2_sheet"),
    ]


@functools.cache
def good_metrics() -> tuple[SheetMetrics, ...]:
    return tuple(analyze(good_sheet(n, p)) for n in PHOTOS for p in PATHS)


@functools.cache
def measured(name: str, path: str, kind: str) -> SheetMetrics:
    build = {"good": good_sheet, "shuffled": shuffled_sheet, "copied": copied_sheet,
             "blank-panel": blank_panel_sheet}[kind]
    return analyze(build(name, path))


# ---------------------------------------------------------------- good sheets


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


@pytest.mark.parametrize(("background", "subject"), [("astronaut", "coffee"),
                                                     ("camera", "rocket"),
                                                     ("coffee", "chelsea")])
def test_a_small_moving_subject_is_a_change_not_a_copy(background: str, subject: str) -> None:
    m = analyze(moving_subject_sheet(background, subject, size=0.08, step=0.04))
    assert not any(m.copied_pairs)
    assert min(m.changes) > 0.05
    assert m.implied_labels() == ()


# ---------------------------------------------------------------- broken sheets


@pytest.mark.parametrize("path", ["pan-right", "zoom-in"])
@pytest.mark.parametrize("name", PHOTOS)
def test_copied_phases_are_found(name: str, path: str) -> None:
    m = measured(name, path, "copied")
    assert max(m.changes) < 0.01
    assert m.implied_labels() == ("copied_phases",)


@pytest.mark.parametrize(("size", "quality"), [(512, 60), (1024, 50), (1000, 80)])
def test_copies_survive_jpeg_and_odd_panel_sizes(size: int, quality: int) -> None:
    m = analyze(jpeg(copied_sheet("astronaut", "pan-right", size), quality))
    assert all(m.copied_pairs)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", PHOTOS)
def test_shuffled_order_scores_clearly_below_the_true_order(name: str, path: str) -> None:
    true_order = measured(name, path, "good").order_fraction
    shuffled = measured(name, path, "shuffled").order_fraction
    assert shuffled <= 0.5 < true_order


@pytest.mark.parametrize("names", UNRELATED)
def test_unrelated_pictures_are_a_collage(names: tuple[str, str, str, str]) -> None:
    m = analyze(unrelated_sheet(names))
    assert m.separated_axes == 2
    assert m.unrelated_pairs >= 2
    assert m.implied_labels() == ("panorama_or_collage",)


@pytest.mark.parametrize("name", PHOTOS)
def test_one_continuous_picture_is_a_panorama(name: str) -> None:
    m = analyze(panorama_sheet(name))
    assert m.gutters == 0
    assert m.continuous_picture
    assert m.implied_labels() == ("panorama_or_collage",)


@pytest.mark.parametrize("name", PHOTOS)
def test_three_columns_are_not_a_2x2_sheet(name: str) -> None:
    m = analyze(three_panel_sheet(name))
    assert (m.grid_rows, m.grid_cols) == (1, 3)
    assert m.implied_labels() == ("not_2x2_sheet",)


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


# ---------------------------------------------------------------- contract


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


def test_a_512_sheet_is_measured_fast() -> None:
    sheet = good_sheet("astronaut", "pan-right")
    analyze(sheet)
    best = min(_timed(lambda: analyze(sheet)) for _ in range(5))
    assert best < 0.1  # about 25 ms on one CPU core; the bound only catches regressions


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started
