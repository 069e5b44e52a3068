"""The pixel judge: valid judgments, and good sheets clearly above every broken kind.

The figure compared is the item Overall on the judge's dimensions (C mean = C0, D mean = the
mean of D0, D3, D5, D9, D14, averaged), before any cap, so the separation comes from the
scores themselves.
"""

from __future__ import annotations

import functools
import hashlib
import statistics
from datetime import datetime, timezone
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.cases.model import Case
from pytest_imagetime.judges.base import Judge, SheetToJudge
from pytest_imagetime.judges.pixel import JUDGE_MODEL, SCORED_DIMS, PixelJudge
from pytest_imagetime.models.base import GenerationRequest
from pytest_imagetime.rubric.caps import apply_caps, case_scopes
from pytest_imagetime.rubric.facts import ALL_DIMS, RUBRIC_VERSION, Setting, nullable_dims
from pytest_imagetime.rubric.judgment import Judgment, validate_judgment
from pytest_imagetime.scoring.item import score_item
from pytest_imagetime.sheet import METRICS_VERSION
from pytest_imagetime.sheet.metrics import analyze
from tests.builders import make_case
from tests.photo_sheets import (
    PATHS,
    PHOTOS,
    broken_kinds,
    good_sheet,
    panorama_sheet,
    shuffled_sheet,
)

MIN_GAP = 2.0  # worst good sheet over best broken sheet, in Overall points (measured: 3.3)


def to_judge(image: Image.Image, case: Case, setting: Setting = "prompt-only") -> SheetToJudge:
    digest = hashlib.sha256(image.tobytes()).hexdigest()
    return SheetToJudge(case=case, setting=setting, image=image, path=Path("sheet.png"),
                        image_sha256=digest)


def judge(image: Image.Image, setting: Setting = "prompt-only") -> Judgment:
    return PixelJudge().judge(sheet=to_judge(image, make_case(), setting))


def overall(j: Judgment) -> float:
    value = score_item(j.scores).overall
    assert value is not None
    return value


@functools.cache
def good_overalls() -> dict[str, float]:
    return {f"{n}/{p}": overall(judge(good_sheet(n, p))) for n in PHOTOS for p in PATHS}


@functools.cache
def broken_judgments() -> dict[str, tuple[Judgment, ...]]:
    return {kind: tuple(judge(sheet) for sheet in build()) for kind, build, _ in broken_kinds()}


# ---------------------------------------------------------------- the judge's contract


def test_pixel_judge_takes_no_argument() -> None:
    with pytest.raises(ValueError, match="pixel judge takes no argument"):
        PixelJudge("strict")


def test_pixel_judge_describes_itself() -> None:
    pixel = PixelJudge()
    assert isinstance(pixel, Judge)
    assert pixel.name == "pixel"
    assert pixel.cpu_bound  # judged where its sheet was stored, not in the judge pool
    assert pixel.scored_dims == frozenset({"C0", "D0", "D3", "D5", "D9", "D14"})
    assert dict(pixel.config()) == {"judge": "pixel",
                                    "judge_model": f"pixel-metrics/{METRICS_VERSION}",
                                    "rubric_version": RUBRIC_VERSION}


@pytest.mark.parametrize("setting", ["prompt-only", "scaffold"])
@pytest.mark.parametrize("constraint", [False, True])
def test_judgments_pass_validation(setting: Setting, constraint: bool) -> None:
    case = make_case(constraint=constraint, quantity=False)
    pixel = PixelJudge()
    for image in (good_sheet("coffee", "pan-right"), panorama_sheet("rocket"),
                  Image.new("RGB", (64, 64), (0, 0, 0))):
        j = pixel.judge(sheet=to_judge(image, case, setting))
        validate_judgment(j, case, setting, scored_dims=pixel.scored_dims)  # raises if invalid
        nullable = nullable_dims(setting, case.applicable)
        scored = {dim for dim, value in j.scores.items() if value is not None}
        assert scored == set(pixel.scored_dims) - nullable, (setting, constraint, scored)


def test_judgment_records_what_a_stored_judgment_needs() -> None:
    image = good_sheet("astronaut", "zoom-in")
    j = judge(image)
    assert set(j.scores) == set(ALL_DIMS)
    for dim, value in j.scores.items():
        if dim in SCORED_DIMS:
            assert isinstance(value, int) and not isinstance(value, bool)
            assert 0 <= value <= 10
        else:
            assert value is None
    metrics = analyze(image)
    assert j.labels == metrics.implied_labels()
    assert j.raw == metrics.to_json()
    assert (j.judge, j.judge_model, j.rubric_version) == ("pixel", JUDGE_MODEL, RUBRIC_VERSION)
    assert j.prompt_version is None
    assert j.evaluates_predicates is False
    assert j.predicates == () and j.forbidden == ()
    assert datetime.fromisoformat(j.date).utcoffset() == timezone.utc.utcoffset(None)
    assert 0.0 < j.latency_s < 5.0
    assert j.rationale and "\n" not in j.rationale
    assert Judgment.from_json(j.to_json()) == j


def test_judgments_are_deterministic() -> None:
    image = shuffled_sheet("camera", "pan-diagonal")
    first, second = judge(image), judge(image.copy())
    assert first.scores == second.scores
    assert first.labels == second.labels
    assert first.raw == second.raw
    assert first.rationale == second.rationale


@pytest.mark.parametrize("image", [
    Image.new("L", (32, 32), 200),
    Image.new("RGBA", (32, 32), (0, 0, 0, 0)),
    Image.new("RGB", (3, 900), (40, 90, 200)),
], ids=["grey-32", "rgba-32", "thin-strip"])
def test_degenerate_images_are_scored_low_not_crashed(image: Image.Image) -> None:
    j = judge(image)
    assert j.labels == ("not_2x2_sheet",)
    assert j.scores["C0"] == 0
    assert all(value is not None and value <= 2
               for dim, value in j.scores.items() if dim in SCORED_DIMS - {"D3", "D5", "D9"})


# ---------------------------------------------------------------- separation


def test_good_sheets_score_high_and_carry_no_label() -> None:
    overalls = good_overalls()
    assert min(overalls.values()) >= 9.0, overalls
    for n in PHOTOS:
        assert judge(good_sheet(n, "pan-right")).labels == ()


@pytest.mark.parametrize("kind", [k for k, _, _ in broken_kinds()])
def test_every_good_sheet_beats_every_broken_sheet(kind: str) -> None:
    worst_good = min(good_overalls().values())
    best_broken = max(overall(j) for j in broken_judgments()[kind])
    assert worst_good - best_broken >= MIN_GAP, (kind, worst_good, best_broken)


@pytest.mark.parametrize(("kind", "label"), [(k, lab) for k, _, lab in broken_kinds()])
def test_each_broken_kind_gets_its_label(kind: str, label: str | None) -> None:
    for j in broken_judgments()[kind]:
        if label is None:  # a shuffle is not visible as a failure label, only in the scores
            assert j.labels == ()
            assert j.scores["C0"] is not None and j.scores["C0"] <= 5
        else:
            assert label in j.labels, (kind, j.rationale)


def test_copies_and_shuffles_lose_phase_distinctiveness_or_order() -> None:
    copied = broken_judgments()["copied"]
    shuffled = broken_judgments()["shuffled"]
    assert max(j.scores["D9"] or 0 for j in copied) <= 1
    assert max(j.scores["D9"] or 0 for j in shuffled) <= 4
    assert statistics.median(j.scores["C0"] or 0 for j in shuffled) <= 5


# ---------------------------------------------------------------- the procedural renderer


@functools.cache
def procedural_overall(variant: str, size: int, seed: int) -> tuple[float, tuple[str, ...]]:
    from pytest_imagetime.models import procedural
    model = procedural.ProceduralModel(None if variant == "good" else variant)
    request = GenerationRequest(make_case(), "prompt-only", size, seed)
    j = judge(model.generate(request=request).image)
    return overall(j), j.labels


@pytest.mark.parametrize("size", [256, 512])
def test_procedural_variants_separate_like_photographs(size: int) -> None:
    good = [procedural_overall("good", size, seed) for seed in (0, 1)]
    assert all(labels == () for _, labels in good)
    worst_good = min(value for value, _ in good)
    expected = {"copied": "copied_phases", "three-panels": "not_2x2_sheet",
                "blank": "not_2x2_sheet", "shuffled": None, "collage": None}
    for variant, label in expected.items():
        value, labels = procedural_overall(variant, size, 0)
        assert worst_good - value >= MIN_GAP, (variant, worst_good, value)
        if label is not None:
            assert label in labels


# ---------------------------------------------------------------- the packaged cases


def _packaged_cases() -> list[Case]:
    from pytest_imagetime.cases.loading import builtin_cases_dir, case_files, load_case_file

    cases = [c for f in case_files([builtin_cases_dir()]) for c in load_case_file(f)]
    return cases[::3]  # a third of them, spread over both domains, keeps this test quick


def test_controls_fail_the_gate_on_real_cases() -> None:
    """On the packaged cases, every good procedural sheet scores above every broken one,
    and no broken one passes the layout gate."""
    from pytest_imagetime.engine.runner import case_seed
    from pytest_imagetime.models.procedural import ProceduralModel
    from pytest_imagetime.rubric.facts import GATE_C0_MIN

    worst_good, best_broken = 10.0, 0.0
    for case in _packaged_cases():
        request = GenerationRequest(case, "prompt-only", 256, case_seed(0, case.id))
        for variant in ("good", "copied", "shuffled", "collage", "three-panels", "blank"):
            sheet = ProceduralModel(variant).generate(request=request).image
            j = judge(sheet)
            capped, _ = apply_caps(j.scores, j.labels, case_scopes(case, "prompt-only"))
            scores = score_item(capped)
            assert scores.overall is not None
            if variant == "good":
                assert j.labels == (), case.id
                assert scores.gate_pass, case.id
                worst_good = min(worst_good, scores.overall)
            else:
                assert capped["C0"] is not None and capped["C0"] < GATE_C0_MIN, (case.id, variant)
                best_broken = max(best_broken, scores.overall)
    assert worst_good - best_broken >= 2.0
