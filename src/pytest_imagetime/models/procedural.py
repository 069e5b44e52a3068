"""Model ``procedural``: a deterministic offline renderer of motion sheets.

It needs no GPU, no network and no weights, so the whole pipeline (generation, store, pixel
metrics, judging, reports) runs in tests and CI. ``procedural`` draws a correct sheet; every
other variant breaks the protocol in one known way, so metrics, judges and caps can be checked
against a failure whose cause is certain.

The picture is abstract but carries what a judge looks for: a scene whose palette comes from
the case's scene, the case's non-target anchors fixed on the back wall (pixel-identical in all
four panels), a subject walking towards a vessel, and the vessel filling up, t1 to t4.
"""

from __future__ import annotations

import colorsys
import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..cases.model import Case
from ..sheet.geometry import STAGE_ORDER, WHITE, Box, compose, gutter_width, panel_boxes
from .base import Generated, GenerationRequest, ModelError

if TYPE_CHECKING:  # numpy and Pillow are imported at the first drawing: collecting never loads them
    import numpy as np
    from PIL import Image, ImageDraw

VARIANTS: tuple[str, ...] = ("good", "copied", "shuffled", "collage", "three-panels", "blank")
RENDERER_VERSION = "1"
MIN_SIZE, MAX_SIZE = 64, 2048

SHUFFLED_ORDER = (2, 0, 3, 1)  # the panels show t3, t1, t4, t2: scrambled, not reversed
THREE_PANEL_STAGES = (0, 1, 3)  # t3 is the stage left out
BLANK_COLOUR = (128, 128, 128)  # mid grey: a white sheet would look like one big gutter

# Layout, as fractions of the panel: x of its width, y of its height, sizes of its shorter
# side. The subject walks along the floor and the vessel stands right of its path, both below
# the anchors on the wall, so nothing that changes between stages ever covers an anchor.
HORIZON_Y = 0.56
GROUND_Y = 0.86
ANCHOR_Y = 0.39  # low enough that the stage label never reaches an anchor, even at 64 px
ANCHOR_SPAN = (0.06, 0.94)
MAX_ANCHORS = 8
SUBJECT_XS = (0.13, 0.32, 0.51, 0.70)
SUBJECT_JITTER = 0.025  # under half the smallest step, so the order of stages always holds
FILL_LEVELS = (0.0, 0.15, 0.55, 1.0)
VESSEL_X = (0.80, 0.95)
ARM_ANGLES = (85.0, 45.0, 20.0, 0.0)  # degrees below horizontal: the arm rises to reach
STRIDES = (0.012, 0.05, 0.05, 0.02)  # half the distance between the feet
SHAPES = ("panel", "disc", "triangle", "diamond", "house")
COLLAGE_SPOTS = ((0.03, 0.05, 0.58), (0.47, 0.02, 0.40), (0.08, 0.47, 0.48), (0.36, 0.36, 0.62))
INK = (40, 40, 48)  # outlines of the vessel and of the collage pictures
LABEL_INK = (255, 255, 255)
LABEL_BOX = (28, 28, 32)
GOLDEN = 0.618034  # hue step that keeps successive anchor colours far apart
# A colour the case names wins over a hashed one: "a blue bench" is drawn blue.
NAMED_COLOURS: Mapping[str, tuple[float, float, float]] = {
    "red": (0.0, 0.75, 0.80), "orange": (0.07, 0.80, 0.95), "yellow": (0.14, 0.80, 0.95),
    "green": (0.33, 0.65, 0.65), "teal": (0.48, 0.70, 0.65), "blue": (0.60, 0.75, 0.85),
    "purple": (0.78, 0.55, 0.65), "violet": (0.78, 0.55, 0.65), "pink": (0.92, 0.45, 0.95),
    "brown": (0.07, 0.65, 0.50), "wooden": (0.08, 0.55, 0.62), "black": (0.0, 0.0, 0.18),
    "white": (0.0, 0.0, 0.97), "grey": (0.0, 0.0, 0.55), "gray": (0.0, 0.0, 0.55),
    "water": (0.55, 0.55, 0.92), "milk": (0.10, 0.06, 0.97), "coffee": (0.07, 0.70, 0.35),
}

RGB = tuple[int, int, int]
Size = tuple[int, int]


@dataclass(frozen=True)
class Anchor:
    """A non-target object on the back wall; where and how it is drawn never changes."""

    name: str
    shape: str
    colour: RGB
    x: float
    y: float
    size: float


@dataclass(frozen=True)
class Scene:
    """Everything one case and seed fix before any panel is drawn."""

    wall: tuple[RGB, RGB]  # top, bottom
    floor: tuple[RGB, RGB]  # far, near
    anchors: tuple[Anchor, ...]
    subject_colour: RGB
    liquid_colour: RGB
    subject_xs: tuple[float, ...]
    collage_spots: tuple[tuple[float, float, float], ...]  # left, top, side of each picture


class ProceduralModel:
    """Draws a motion sheet from the case alone; the same case, seed and size, the same bytes.

    It also serves the other request kinds, so their plumbing runs offline: a reference is its
    t1 stage alone; a scaffold keeps the given top-left cell (the good variant pastes it back
    over its own t1); a dense grid shows stage r in every panel of row r.
    """

    accepts_reference = True
    # Drawn in Python and numpy on this thread: a sheet measured beside the next drawing
    # would only wait for the interpreter lock.
    cpu_bound = True

    def __init__(self, argument: str | None = None) -> None:
        variant = argument or "good"
        if variant not in VARIANTS:
            raise ValueError(f"procedural model: unknown variant {argument!r}; use one of "
                             f"{', '.join(VARIANTS)} (e.g. --imagetime-model=procedural:copied)")
        self.variant = variant

    @property
    def name(self) -> str:
        return "procedural" if self.variant == "good" else f"procedural:{self.variant}"

    def config(self) -> Mapping[str, Any]:
        return {"backend": "procedural", "variant": self.variant,
                "renderer_version": RENDERER_VERSION}

    def generate(self, *, request: GenerationRequest) -> Generated:
        if not MIN_SIZE <= request.size <= MAX_SIZE:
            raise ModelError(f"procedural model: size {request.size} is outside "
                             f"{MIN_SIZE}..{MAX_SIZE}")
        scene = plan_scene(request.case, request.seed)
        details = {"variant": self.variant, "renderer_version": RENDERER_VERSION}
        if request.kind == "reference":
            return Generated(_reference(scene, request.size), details)
        if request.grid != (2, 2):
            return Generated(_dense_grid(scene, request.size, request.grid), details)
        image = _SHEETS[self.variant](scene, request.size)
        if request.scaffold is not None and self.variant == "good":
            first = panel_boxes(request.size)[0].as_tuple()
            image.paste(request.scaffold.convert("RGB").crop(first), first[:2])
        return Generated(image, details)


# ---------------------------------------------------------------- planning


def plan_scene(case: Case, seed: int) -> Scene:
    """Colours from the names in the case, positions jittered by the (case, seed) hash."""
    rng = _rng(case.id, seed)
    hue = _unit_hash(case.setup.scene)
    subject_name, target_name = _subject_and_target(case)
    subject_hue = _unit_hash(subject_name)
    liquid_hue = _unit_hash(target_name)
    if _hue_distance(subject_hue, liquid_hue) < 0.2:  # keep subject and target apart
        liquid_hue = (subject_hue + 0.5) % 1.0
    jitter = rng.uniform(-SUBJECT_JITTER, SUBJECT_JITTER, len(SUBJECT_XS))
    return Scene(
        wall=(_hsv(hue, 0.16, 0.95), _hsv(hue, 0.28, 0.80)),
        floor=(_hsv(hue + 0.08, 0.32, 0.66), _hsv(hue + 0.08, 0.40, 0.46)),
        anchors=_plan_anchors(case.entities.get("non_targets", ()), rng),
        subject_colour=_named_colour(subject_name) or _hsv(subject_hue, 0.75, 0.78),
        liquid_colour=_named_colour(target_name) or _hsv(liquid_hue, 0.70, 0.85),
        subject_xs=tuple(x + float(dx) for x, dx in zip(SUBJECT_XS, jitter, strict=True)),
        collage_spots=tuple((left + float(dx), top + float(dy), side)
                            for (left, top, side), (dx, dy)
                            in zip(COLLAGE_SPOTS, rng.uniform(-0.02, 0.02, (4, 2)), strict=True)),
    )


def _plan_anchors(names: Sequence[str], rng: np.random.Generator) -> tuple[Anchor, ...]:
    shown = tuple(names[:MAX_ANCHORS])
    if not shown:
        return ()
    left, right = ANCHOR_SPAN
    slot = (right - left) / len(shown)
    size = min(0.14, 0.7 * slot)
    first_shape = int(_unit_hash(shown[0]) * len(SHAPES))
    first_hue = _unit_hash("|".join(shown))
    x_offsets = rng.uniform(-0.15, 0.15, len(shown)) * slot
    y_offsets = rng.uniform(-0.01, 0.01, len(shown))
    return tuple(
        Anchor(name=name, shape=SHAPES[(first_shape + i) % len(SHAPES)],
               colour=_named_colour(name) or _hsv(first_hue + i * GOLDEN, 0.55, 0.62),
               x=left + (i + 0.5) * slot + float(dx), y=ANCHOR_Y + float(dy), size=size)
        for i, (name, dx, dy) in enumerate(zip(shown, x_offsets, y_offsets, strict=True))
    )


def _subject_and_target(case: Case) -> tuple[str, str]:
    actors = case.entities.get("actors", ())
    targets = case.entities.get("targets", ())
    subject = actors[0] if actors else (targets[0] if targets else case.id)
    target = targets[0] if targets else f"{subject} state"
    return subject, target


def _named_colour(text: str) -> RGB | None:
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in NAMED_COLOURS:
            return _hsv(*NAMED_COLOURS[word])
    return None


def _rng(case_id: str, seed: int) -> np.random.Generator:
    import numpy as np

    digest = hashlib.sha256(f"{case_id}\x00{seed}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "big"))


def _unit_hash(text: str) -> float:
    """A stable number in [0, 1) for a text (Python's hash() changes between runs)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2.0**64


def _hue_distance(a: float, b: float) -> float:
    d = abs(a - b) % 1.0
    return min(d, 1.0 - d)


def _hsv(hue: float, saturation: float, value: float) -> RGB:
    r, g, b = colorsys.hsv_to_rgb(hue % 1.0, saturation, value)
    return (round(r * 255), round(g * 255), round(b * 255))


def _shade(colour: RGB, factor: float) -> RGB:
    r, g, b = (min(255, round(c * factor)) for c in colour)
    return (r, g, b)


# ---------------------------------------------------------------- drawing one panel


@dataclass(frozen=True)
class _Frame:
    """Maps layout fractions to pixels; all panels of a sheet share one frame."""

    width: int
    height: int

    @property
    def unit(self) -> float:
        return float(min(self.width, self.height))

    def x(self, fraction: float) -> float:
        return fraction * self.width

    def y(self, fraction: float) -> float:
        return fraction * self.height

    def u(self, fraction: float) -> float:
        return fraction * self.unit

    def line(self) -> int:
        return max(1, round(self.u(0.012)))


def anchor_box(anchor: Anchor, frame_size: Size) -> Box:
    """The pixels an anchor and its shadow may touch in a panel laid out on frame_size."""
    frame = _Frame(*frame_size)
    half = frame.u(anchor.size) / 2
    reach = half + frame.u(0.02)  # the shadow reaches further right and down
    cx, cy = frame.x(anchor.x), frame.y(anchor.y)
    return Box(math.floor(cx - half) - 1, math.floor(cy - half) - 1,
               math.ceil(cx + reach) + 1, math.ceil(cy + reach) + 1)


def draw_backdrop(scene: Scene, canvas: Size, frame_size: Size) -> Image.Image:
    """The part of a panel that never changes: wall, floor and anchors."""
    import numpy as np
    from PIL import Image, ImageDraw

    frame = _Frame(*frame_size)
    width, height = canvas
    horizon = round(frame.y(HORIZON_Y))
    pixels = np.concatenate([_gradient(*scene.wall, horizon, width),
                             _gradient(*scene.floor, height - horizon, width)])
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    _draw_floor_lines(draw, scene, frame, horizon, width)
    for anchor in scene.anchors:
        _draw_anchor(draw, anchor, scene, frame)
    return image


def draw_stage(scene: Scene, backdrop: Image.Image, stage: int, frame_size: Size,
               *, labelled: bool = True) -> Image.Image:
    """One stage (0 for t1 .. 3 for t4) drawn over a copy of the backdrop."""
    from PIL import ImageDraw

    frame = _Frame(*frame_size)
    image = backdrop.copy()
    draw = ImageDraw.Draw(image)
    _draw_trail(draw, scene, stage, frame)
    _draw_vessel(draw, scene, stage, frame)
    _draw_subject(draw, scene, stage, frame)
    if labelled:
        _draw_label(draw, STAGE_ORDER[stage], frame)
    return image


def _gradient(top: RGB, bottom: RGB, height: int, width: int) -> np.ndarray[Any, Any]:
    import numpy as np

    t = np.linspace(0.0, 1.0, max(height, 1))[:height, None]
    rows = (1.0 - t) * np.array(top, float) + t * np.array(bottom, float)
    return np.repeat(np.rint(rows).astype(np.uint8)[:, None, :], width, axis=1)


def _draw_floor_lines(draw: ImageDraw.ImageDraw, scene: Scene, frame: _Frame, horizon: int,
                      width: int) -> None:
    """A horizon line and floor seams closer together with distance, for depth."""
    draw.line([(0, horizon), (width, horizon)], fill=_shade(scene.floor[0], 0.7),
              width=frame.line())
    seam = _shade(scene.floor[1], 1.12)
    for k in range(1, 6):
        y = horizon + (frame.height - horizon) * (k / 6) ** 1.6
        draw.line([(0, y), (width, y)], fill=seam, width=1)


def _draw_anchor(draw: ImageDraw.ImageDraw, anchor: Anchor, scene: Scene, frame: _Frame) -> None:
    cx, cy = frame.x(anchor.x), frame.y(anchor.y)
    half = frame.u(anchor.size) / 2
    offset = frame.u(0.02)  # the light comes from the upper left, for every object
    _draw_shape(draw, anchor.shape, (cx + offset, cy + offset), half,
                fill=_shade(scene.wall[1], 0.82), outline=None, width=0)
    _draw_shape(draw, anchor.shape, (cx, cy), half, fill=anchor.colour,
                outline=_shade(anchor.colour, 0.45), width=frame.line())


def _draw_shape(draw: ImageDraw.ImageDraw, shape: str, centre: tuple[float, float], half: float,
                *, fill: RGB, outline: RGB | None, width: int) -> None:
    cx, cy = centre
    box = (cx - half, cy - half, cx + half, cy + half)
    if shape == "panel":
        draw.rounded_rectangle(box, radius=half * 0.15, fill=fill, outline=outline, width=width)
    elif shape == "disc":
        draw.ellipse(box, fill=fill, outline=outline, width=width)
    else:
        points = _polygon(shape, cx, cy, half)
        draw.polygon(points, fill=fill, outline=outline, width=width)


def _polygon(shape: str, cx: float, cy: float, half: float) -> list[tuple[float, float]]:
    if shape == "triangle":
        return [(cx, cy - half), (cx + half, cy + half), (cx - half, cy + half)]
    if shape == "diamond":
        return [(cx, cy - half), (cx + half, cy), (cx, cy + half), (cx - half, cy)]
    if shape == "house":
        eave = cy - 0.2 * half
        return [(cx, cy - half), (cx + half, eave), (cx + half, cy + half),
                (cx - half, cy + half), (cx - half, eave)]
    raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")


def _draw_trail(draw: ImageDraw.ImageDraw, scene: Scene, stage: int, frame: _Frame) -> None:
    """Footprints from the start to where the subject stands now: the path so far."""
    start, end = frame.x(scene.subject_xs[0]), frame.x(scene.subject_xs[stage])
    y = frame.y(GROUND_Y) + frame.u(0.035)
    radius = max(1.0, frame.u(0.008))
    step = frame.u(0.045)
    colour = _shade(scene.floor[1], 0.75)
    x = start
    while x < end - frame.u(0.06):
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), fill=colour)
        x += step


def _draw_vessel(draw: ImageDraw.ImageDraw, scene: Scene, stage: int, frame: _Frame) -> None:
    """A glass on the floor whose liquid level is the target's state."""
    left, right = frame.x(VESSEL_X[0]), frame.x(VESSEL_X[1])
    bottom = frame.y(GROUND_Y)
    top = bottom - frame.u(0.30)
    line = frame.line()
    draw.ellipse((left, bottom - frame.u(0.02), right + frame.u(0.04), bottom + frame.u(0.025)),
                 fill=_shade(scene.floor[1], 0.7))
    draw.rectangle((left, top, right, bottom), fill=(236, 242, 246), outline=INK, width=line)
    inner_top, inner_bottom = top + line, bottom - line
    level = inner_bottom - (inner_bottom - inner_top) * FILL_LEVELS[stage]
    if FILL_LEVELS[stage] > 0:
        draw.rectangle((left + line, level, right - line, inner_bottom), fill=scene.liquid_colour)
    for mark in (0.25, 0.5, 0.75):
        y = inner_bottom - (inner_bottom - inner_top) * mark
        draw.line([(left, y), (left + (right - left) * 0.3, y)], fill=INK, width=1)


def _draw_subject(draw: ImageDraw.ImageDraw, scene: Scene, stage: int, frame: _Frame) -> None:
    """A simple figure: feet on the floor, stride and reaching arm change with the stage."""
    cx, ground, u = frame.x(scene.subject_xs[stage]), frame.y(GROUND_Y), frame.u
    body, ink, line = scene.subject_colour, _shade(scene.subject_colour, 0.4), frame.line()
    draw.ellipse((cx - u(0.06), ground - u(0.015), cx + u(0.11), ground + u(0.02)),
                 fill=_shade(scene.floor[1], 0.7))
    hip = ground - u(0.10)
    for side in (-1, 1):
        draw.line([(cx, hip), (cx + side * u(STRIDES[stage]), ground)], fill=ink,
                  width=max(1, round(u(0.024))))
    draw.rounded_rectangle((cx - u(0.05), ground - u(0.22), cx + u(0.05), hip + u(0.01)),
                           radius=u(0.025), fill=body, outline=ink, width=line)
    head = u(0.042)
    draw.ellipse((cx - head, ground - u(0.22) - 2 * head, cx + head, ground - u(0.22)),
                 fill=_shade(body, 1.25), outline=ink, width=line)
    shoulder = (cx + u(0.04), ground - u(0.19))
    angle = math.radians(ARM_ANGLES[stage])
    hand = (shoulder[0] + u(0.11) * math.cos(angle), shoulder[1] + u(0.11) * math.sin(angle))
    draw.line([shoulder, hand], fill=ink, width=max(1, round(u(0.022))))


def _draw_label(draw: ImageDraw.ImageDraw, text: str, frame: _Frame) -> None:
    """The stage name in the top-left corner, on a dark tag that reads on any palette."""
    from PIL import ImageFont

    font = ImageFont.load_default(size=max(6, round(frame.u(0.085))))
    pad = max(1.0, frame.u(0.03))
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    tag = (pad, pad, pad + (right - left) + 2 * pad, pad + (bottom - top) + 2 * pad)
    draw.rounded_rectangle(tag, radius=pad * 0.8, fill=LABEL_BOX)
    draw.text((2 * pad - left, 2 * pad - top), text, font=font, fill=LABEL_INK)


# ---------------------------------------------------------------- whole sheets


def stage_canvases(scene: Scene, size: int) -> list[Image.Image]:
    """The four labelled stages, each on the largest panel cell of the sheet.

    Panel cells can differ by a pixel when the space left by the gutter is odd. Every stage is
    laid out on the smallest cell and drawn on the largest, so any stage can be cropped into
    any cell and the pixels they share stay identical.
    """
    boxes = panel_boxes(size)
    frame = (boxes[0].width, boxes[0].height)
    canvas = (max(b.width for b in boxes), max(b.height for b in boxes))
    backdrop = draw_backdrop(scene, canvas, frame)
    return [draw_stage(scene, backdrop, stage, frame) for stage in range(len(STAGE_ORDER))]


def _reference(scene: Scene, size: int) -> Image.Image:
    """The t1 stage alone, filling a square image."""
    from PIL import Image

    return stage_canvases(scene, 2 * size)[0].resize((size, size), Image.Resampling.LANCZOS)


def _dense_grid(scene: Scene, size: int, grid: tuple[int, int]) -> Image.Image:
    """Rows of panels, row r showing stage r (of four) in every panel, white gutters."""
    from PIL import Image

    rows, cols = grid
    gutter = gutter_width(size)
    cell_w, cell_h = (size - (cols - 1) * gutter) // cols, (size - (rows - 1) * gutter) // rows
    canvases = stage_canvases(scene, 2 * max(cell_w, cell_h))
    sheet = Image.new("RGB", (size, size), WHITE)
    for r in range(rows):
        stage = canvases[min(r * len(canvases) // rows, len(canvases) - 1)]
        cell = stage.resize((cell_w, cell_h), Image.Resampling.LANCZOS)
        for c in range(cols):
            sheet.paste(cell, (c * (cell_w + gutter), r * (cell_h + gutter)))
    return sheet


def _sheet_of(canvases: Sequence[Image.Image], order: Sequence[int], size: int) -> Image.Image:
    """Cells in reading order, cell i showing stage order[i]; cropped, never resampled."""
    cells = [canvases[stage].crop((0, 0, box.width, box.height))
             for stage, box in zip(order, panel_boxes(size), strict=True)]
    return compose(cells, size)


def _good_sheet(scene: Scene, size: int) -> Image.Image:
    return _sheet_of(stage_canvases(scene, size), (0, 1, 2, 3), size)


def _copied_sheet(scene: Scene, size: int) -> Image.Image:
    return _sheet_of(stage_canvases(scene, size), (0, 0, 0, 0), size)


def _shuffled_sheet(scene: Scene, size: int) -> Image.Image:
    return _sheet_of(stage_canvases(scene, size), SHUFFLED_ORDER, size)


def _collage_sheet(scene: Scene, size: int) -> Image.Image:
    """Unlabelled stage pictures of different sizes pasted overlapping: no cells, no gutters."""
    from PIL import ImageDraw

    sheet = draw_backdrop(scene, (size, size), (size, size))
    draw = ImageDraw.Draw(sheet)
    border = max(1, round(size * 0.004))
    for stage, (left, top, side) in enumerate(scene.collage_spots):
        width = round(side * size)
        backdrop = draw_backdrop(scene, (width, width), (width, width))
        picture = draw_stage(scene, backdrop, stage, (width, width), labelled=False)
        x, y = round(left * size), round(top * size)
        sheet.paste(picture, (x, y))
        draw.rectangle((x, y, x + width - 1, y + width - 1), outline=INK, width=border)
    return sheet


def _three_panel_sheet(scene: Scene, size: int) -> Image.Image:
    """Three full-height columns with white gutters: a sheet with one stage missing."""
    from PIL import Image

    gutter = gutter_width(size)
    room = size - 2 * gutter
    widths = (room // 3, room // 3, room - 2 * (room // 3))
    sheet = Image.new("RGB", (size, size), WHITE)
    x = 0
    for stage, width in zip(THREE_PANEL_STAGES, widths, strict=True):
        backdrop = draw_backdrop(scene, (width, size), (width, size))
        sheet.paste(draw_stage(scene, backdrop, stage, (width, size)), (x, 0))
        x += width + gutter
    return sheet


def _blank_sheet(scene: Scene, size: int) -> Image.Image:
    from PIL import Image

    return Image.new("RGB", (size, size), BLANK_COLOUR)


_SHEETS: Mapping[str, Callable[[Scene, int], Image.Image]] = {
    "good": _good_sheet,
    "copied": _copied_sheet,
    "shuffled": _shuffled_sheet,
    "collage": _collage_sheet,
    "three-panels": _three_panel_sheet,
    "blank": _blank_sheet,
}
