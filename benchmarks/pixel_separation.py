"""How far the pixel judge separates good motion sheets from broken ones.

Builds sheets from scikit-image's bundled photographs (no download) and, when it is
available, from the procedural renderer; judges each with the pixel judge and prints, per kind
of sheet, the min / median / max of the Overall on the pixel dimensions (C0 against the mean
of D0, D3, D5, D9, D14, before caps), the failure labels fired, and the gap between the worst
good sheet and the best broken one.

    python benchmarks/pixel_separation.py [--size 512] [--all-photos]

``--all-photos`` adds photographs the judge is known to read poorly (a periodic coin grid, a
star field, the moon, a soft clock): they show its limits, not its typical behaviour.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import PIL
from PIL import Image

from pytest_imagetime.cases.model import Case, Predicate, Setup
from pytest_imagetime.judges.base import SheetToJudge
from pytest_imagetime.judges.pixel import PixelJudge
from pytest_imagetime.rubric.facts import Applicability
from pytest_imagetime.rubric.judgment import Judgment
from pytest_imagetime.scoring.item import score_item
from pytest_imagetime.sheet import METRICS_VERSION
from pytest_imagetime.sheet.geometry import compose, gutter_width

try:
    from skimage import data as skimage_data
except ImportError:  # pragma: no cover - the benchmark needs the test extra
    sys.exit("this benchmark needs scikit-image (pip install 'pytest-imagetime[test]')")

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "camera",
          "motorcycle")
HARD_PHOTOS = ("coins", "hubble_deep_field", "moon", "clock")
# (x, y, side, dx, dy, zoom): a square window over the photo, t1 to t4, in fractions.
PATHS = {
    "pan-right": (0.15, 0.2, 0.6, 0.07, 0.0, 1.0),
    "pan-diagonal": (0.15, 0.15, 0.6, 0.06, 0.05, 1.0),
    "zoom-in": (0.1, 0.1, 0.8, 0.03, 0.03, 0.88),
    "zoom-out": (0.25, 0.25, 0.5, -0.04, -0.02, 1.12),
    "pan-down": (0.2, 0.1, 0.6, 0.0, 0.07, 1.0),
}
WHITE = (255, 255, 255)


@dataclass
class Row:
    kind: str
    good: bool
    overalls: list[float]
    labels: Counter[str]
    seconds: float


# ---------------------------------------------------------------- sheets


def photo(name: str) -> Image.Image:
    if name == "motorcycle":
        pixels = getattr(skimage_data, "stereo_motorcycle")()[0]  # noqa: B009 (untyped)
    else:
        pixels = getattr(skimage_data, name)()
    return Image.fromarray(np.asarray(pixels)).convert("RGB")


def crops(image: Image.Image, path: str) -> list[Image.Image]:
    x, y, side, dx, dy, zoom = PATHS[path]
    w, h = image.size
    out = []
    for t in range(4):
        s = side * zoom ** t * min(w, h)
        left, top = (x + dx * t) * w, (y + dy * t) * h
        out.append(image.crop((round(left), round(top), round(left + s), round(top + s))))
    return out


def centre_square(image: Image.Image) -> Image.Image:
    w, h = image.size
    s = min(w, h)
    return image.crop(((w - s) // 2, (h - s) // 2, (w - s) // 2 + s, (h - s) // 2 + s))


def three_columns(image: Image.Image, size: int) -> Image.Image:
    g = gutter_width(size)
    width = (size - 2 * g) // 3
    sheet = Image.new("RGB", (size, size), WHITE)
    w, h = image.size
    for i in range(3):
        left = int((0.1 + 0.08 * i) * w)
        sheet.paste(image.crop((left, 0, left + int(0.3 * w), h)).resize((width, size)),
                    (i * (width + g), 0))
    return sheet


def photo_kinds(names: tuple[str, ...],
                size: int) -> Iterator[tuple[str, bool, Callable[[], list[Image.Image]]]]:
    photos = {n: photo(n) for n in names}
    pairs = [(photos[n], p) for n in names for p in PATHS]

    def good() -> list[Image.Image]:
        return [compose(crops(im, p), size) for im, p in pairs]

    def gutterless() -> list[Image.Image]:
        return [compose(crops(im, p), size, gutter=0) for im, p in pairs]

    def copied() -> list[Image.Image]:
        return [compose([crops(im, p)[0]] * 4, size) for im, p in pairs]

    def shuffled() -> list[Image.Image]:
        return [compose([c[2], c[0], c[3], c[1]], size)
                for c in (crops(im, p) for im, p in pairs)]

    def unrelated() -> list[Image.Image]:
        return [compose([centre_square(photos[n]) for n in four], size)
                for four in itertools.combinations(names, 4)]

    def panorama() -> list[Image.Image]:
        return [im.resize((size, size), Image.Resampling.LANCZOS) for im in photos.values()]

    def three_panels() -> list[Image.Image]:
        return [three_columns(im, size) for im in photos.values()]

    def blank_panel() -> list[Image.Image]:
        return [compose([*crops(im, p)[:2], Image.new("RGB", (8, 8), WHITE), crops(im, p)[3]],
                        size) for im, p in pairs]

    def blank() -> list[Image.Image]:
        return [Image.new("RGB", (size, size), c) for c in (WHITE, (0, 0, 0), (128, 128, 128))]

    yield "good photos", True, good
    yield "good photos, no gutters", True, gutterless
    yield "copied", False, copied
    yield "shuffled (t3 t1 t4 t2)", False, shuffled
    yield "unrelated photos", False, unrelated
    yield "panorama (one photo)", False, panorama
    yield "three columns", False, three_panels
    yield "blank panel", False, blank_panel
    yield "blank sheet", False, blank


def procedural_kinds(size: int) -> Iterator[tuple[str, bool, Callable[[], list[Image.Image]]]]:
    try:
        from pytest_imagetime.models.base import GenerationRequest
        from pytest_imagetime.models.procedural import VARIANTS, ProceduralModel
    except ImportError:
        return
    case = benchmark_case()
    for variant in VARIANTS:
        model = ProceduralModel(None if variant == "good" else variant)

        def render(model: ProceduralModel = model) -> list[Image.Image]:
            return [model.generate(request=GenerationRequest(case, "prompt-only", size, seed))
                    .image for seed in range(4)]

        yield f"procedural:{variant}", variant == "good", render


def benchmark_case() -> Case:
    return Case(
        id="bench-pour-water-1", domain="Kitchen", subcategory="Pouring and mixing",
        concept="pour water", difficulty="easy", variant=1, levels=("L0", "L1", "L3"),
        applicable=Applicability(False, True, False),
        setup=Setup("a wooden kitchen counter", "photorealistic", "fixed side view"),
        entities={"actors": ("a cook",), "targets": ("an empty glass",),
                  "non_targets": ("a green tea towel",)},
        states={"t1": "empty", "t2": "pouring", "t3": "half full", "t4": "full"},
        predicates=tuple(Predicate(f"p{i}", f"t{i}", "stage") for i in range(1, 5)),
        temporal_constraints=(), forbidden=(),
        prompt="One square image, a 2x2 grid: panel 1 (top left) ... panel 4 (bottom right).",
    )


# ---------------------------------------------------------------- judging


def judge_all(images: list[Image.Image], judge: PixelJudge,
              case: Case) -> tuple[list[Judgment], float]:
    """Judgments of the images, and the mean seconds per sheet."""
    started = time.perf_counter()
    judgments = [judge.judge(sheet=SheetToJudge(
        case=case, setting="prompt-only", image=im, path=Path("bench.png"),
        image_sha256=hashlib.sha256(im.tobytes()).hexdigest())) for im in images]
    return judgments, (time.perf_counter() - started) / max(1, len(images))


def overall(j: Judgment) -> float:
    value = score_item(j.scores).overall
    return float("nan") if value is None else value


def measure(kinds: Iterator[tuple[str, bool, Callable[[], list[Image.Image]]]]) -> list[Row]:
    judge, case = PixelJudge(), benchmark_case()
    rows = []
    for kind, good, build in kinds:
        judgments, seconds = judge_all(build(), judge, case)
        labels: Counter[str] = Counter(label for j in judgments for label in j.labels)
        labels["(none)"] = sum(1 for j in judgments if not j.labels)
        rows.append(Row(kind, good, [overall(j) for j in judgments], labels, seconds))
    return rows


# ---------------------------------------------------------------- report


def print_report(rows: list[Row], size: int) -> None:
    print(f"pixel judge separation: pixel-metrics/{METRICS_VERSION}, {size}x{size} sheets")
    print(f"python {platform.python_version()}, numpy {np.__version__}, pillow "
          f"{PIL.__version__}, {platform.machine()} {platform.system()}")
    print()
    header = f"{'kind':<28}{'n':>4}{'min':>7}{'median':>8}{'max':>7}{'ms/sheet':>10}  labels"
    print(header)
    print("-" * len(header))
    for row in rows:
        fired = ", ".join(f"{k} {v}" for k, v in sorted(row.labels.items()) if v)
        print(f"{row.kind:<28}{len(row.overalls):>4}{min(row.overalls):>7.2f}"
              f"{statistics.median(row.overalls):>8.2f}{max(row.overalls):>7.2f}"
              f"{row.seconds * 1000:>10.1f}  {fired}")
    print()
    worst_good = min(min(r.overalls) for r in rows if r.good)
    for row in rows:
        if not row.good:
            print(f"gap, worst good ({worst_good:.2f}) over best {row.kind}: "
                  f"{worst_good - max(row.overalls):+.2f}")
    best_broken = max(max(r.overalls) for r in rows if not r.good)
    print(f"overall gap, worst good over best broken: {worst_good - best_broken:+.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=512, help="sheet side in pixels")
    parser.add_argument("--all-photos", action="store_true",
                        help="add photographs the pixel judge reads poorly")
    args = parser.parse_args()
    names = PHOTOS + (HARD_PHOTOS if args.all_photos else ())
    kinds = itertools.chain(photo_kinds(names, args.size), procedural_kinds(args.size))
    print_report(measure(kinds), args.size)


if __name__ == "__main__":
    main()
