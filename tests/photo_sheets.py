"""Motion sheets built from real photographs, for the pixel-metric and pixel-judge tests.

Sheets are built from scikit-image's bundled photographs (no download): a good sheet is four
crops of one photograph along a pan or zoom path, composed with thin white gutters; broken
sheets copy, shuffle, mix, merge or blank those panels.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PIL import Image
from skimage import data as skimage_data  # the test extra; photos ship in the package

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
