"""The procedural model: a correct sheet, and each control broken in exactly its one way."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from pytest_imagetime.cases.model import STAGES, Case, Forbidden, Predicate, Setup
from pytest_imagetime.models.base import GenerationRequest, ImageModel, ModelError
from pytest_imagetime.models.procedural import (
    SHUFFLED_ORDER,
    VARIANTS,
    ProceduralModel,
    anchor_box,
    draw_backdrop,
    plan_scene,
)
from pytest_imagetime.rubric.facts import Applicability
from pytest_imagetime.sheet.geometry import WHITE, Box, gutter_width, panel_boxes

Pixels = np.ndarray[Any, Any]

ANCHORS = ("a red toaster", "a wall clock", "a potted basil plant")


def make_case(case_id: str = "kitchen-pour-water-1", *, scene: str = "a bright kitchen counter",
              actors: tuple[str, ...] = ("a young cook",),
              targets: tuple[str, ...] = ("a glass kettle",),
              non_targets: tuple[str, ...] = ANCHORS) -> Case:
    entities = {role: names for role, names in
                (("actors", actors), ("targets", targets), ("non_targets", non_targets)) if names}
    return Case(
        id=case_id, domain="Kitchen", subcategory="Pouring and mixing", concept="pour water",
        difficulty="easy", variant=1, levels=("L0", "L1", "L2", "L3", "L5"),
        applicable=Applicability(constraint=False, quantity=True, occlusion=False),
        setup=Setup(scene=scene, style="flat illustration", camera="fixed side view"),
        entities=entities,
        states={"t1": "the kettle is empty", "t2": "the cook starts pouring",
                "t3": "the kettle is half full", "t4": "the kettle is full"},
        predicates=tuple(Predicate(f"p{i}", stage, f"stage {stage} is visible")
                         for i, stage in enumerate(STAGES, start=1)),
        temporal_constraints=("the water level only rises",),
        forbidden=(Forbidden("f1", "the kettle is already full at t1"),),
        prompt="One square image divided into a 2x2 grid of four equal panels.",
    )


def generate(variant: str = "good", *, case: Case | None = None, seed: int = 0,
             size: int = 512) -> Image.Image:
    request = GenerationRequest(case=case or make_case(), setting="prompt-only", size=size,
                                seed=seed)
    return ProceduralModel(variant).generate(request=request).image


def pixels(image: Image.Image, box: Box | None = None) -> Pixels:
    region = image if box is None else image.crop(box.as_tuple())
    return np.asarray(region, dtype=np.int16)


def panels(sheet: Image.Image) -> list[Pixels]:
    return [pixels(sheet, box) for box in panel_boxes(sheet.width)]


def mean_difference(a: Pixels, b: Pixels) -> float:
    return float(np.abs(a - b).mean())


def is_white(region: Pixels) -> bool:
    return bool((region == np.array(WHITE)).all())


# ---------------------------------------------------------------- the model's surface


def test_is_an_image_model_that_draws_on_the_cpu() -> None:
    assert isinstance(ProceduralModel(), ImageModel)
    assert ProceduralModel().cpu_bound  # its sheets are measured between two drawings


@pytest.mark.parametrize("argument", [None, "good"])
def test_good_variant_is_plain_procedural(argument: str | None) -> None:
    model = ProceduralModel(argument)
    assert model.name == "procedural"
    assert model.config() == {"backend": "procedural", "variant": "good",
                              "renderer_version": "1"}


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "good"])
def test_control_variants_name_themselves(variant: str) -> None:
    model = ProceduralModel(variant)
    assert model.name == f"procedural:{variant}"
    assert model.config()["variant"] == variant


def test_unknown_variant_echoes_value_and_lists_accepted() -> None:
    with pytest.raises(ValueError, match="'sideways'") as raised:
        ProceduralModel("sideways")
    for variant in VARIANTS:
        assert variant in str(raised.value)


def test_details_record_variant_and_renderer_version() -> None:
    request = GenerationRequest(case=make_case(), setting="prompt-only", size=128, seed=1)
    generated = ProceduralModel("copied").generate(request=request)
    assert generated.details == {"variant": "copied", "renderer_version": "1"}


@pytest.mark.parametrize("size", [32, 4096])
def test_size_outside_supported_range_is_a_model_error(size: int) -> None:
    with pytest.raises(ModelError, match=str(size)):
        generate(size=size)


@pytest.mark.parametrize("variant", VARIANTS)
def test_sheet_is_square_rgb_of_requested_size(variant: str) -> None:
    sheet = generate(variant, size=300)
    assert sheet.mode == "RGB"
    assert sheet.size == (300, 300)


@settings(max_examples=20, deadline=None)
@given(size=st.integers(64, 1024), seed=st.integers(-(2**63), 2**63 - 1))
def test_any_size_and_seed_give_square_rgb(size: int, seed: int) -> None:
    sheet = generate(size=size, seed=seed)
    assert (sheet.mode, sheet.size) == ("RGB", (size, size))


# ---------------------------------------------------------------- determinism


@pytest.mark.parametrize("variant", VARIANTS)
def test_same_inputs_give_identical_bytes(variant: str) -> None:
    assert generate(variant, seed=7).tobytes() == generate(variant, seed=7).tobytes()


def test_other_seed_changes_the_image() -> None:
    assert generate(seed=1).tobytes() != generate(seed=2).tobytes()


def test_other_case_changes_the_image() -> None:
    other = make_case("garden-water-plants-1", scene="a sunny garden lawn",
                      non_targets=("a wooden fence", "a blue bench"))
    assert generate().tobytes() != generate(case=other).tobytes()


def test_case_with_only_a_target_and_no_anchors_is_drawn() -> None:
    bare = make_case("ice-melts-1", actors=(), non_targets=())
    first, *_, last = panels(generate(case=bare))
    assert mean_difference(first, last) > 0


# ---------------------------------------------------------------- the good sheet


@pytest.mark.parametrize("variant", ["good", "copied", "shuffled"])
@pytest.mark.parametrize("size", [64, 101, 512])
def test_gutters_are_white_at_geometry_positions(variant: str, size: int) -> None:
    sheet = generate(variant, size=size)
    top_left, top_right, bottom_left, _ = panel_boxes(size)
    vertical = Box(top_left.right, 0, top_right.left, size)
    horizontal = Box(0, top_left.bottom, size, bottom_left.top)
    assert vertical.width == horizontal.height == gutter_width(size)
    assert is_white(pixels(sheet, vertical))
    assert is_white(pixels(sheet, horizontal))


@pytest.mark.parametrize("size", [64, 101, 512, 1024])
@pytest.mark.parametrize("seed", [0, 5])
def test_anchor_regions_identical_in_all_four_panels(size: int, seed: int) -> None:
    case = make_case()
    sheet = generate(case=case, seed=seed, size=size)
    boxes = panel_boxes(size)
    frame = (boxes[0].width, boxes[0].height)
    anchors = plan_scene(case, seed).anchors
    assert len(anchors) == len(ANCHORS)
    for anchor in anchors:
        local = anchor_box(anchor, frame)
        regions = [pixels(sheet, Box(p.left + local.left, p.top + local.top,
                                     p.left + local.right, p.top + local.bottom))
                   for p in boxes]
        for region in regions[1:]:
            assert np.array_equal(region, regions[0]), anchor.name


def test_panels_differ_from_each_other() -> None:
    cells = panels(generate())
    for i, a in enumerate(cells):
        for b in cells[i + 1:]:
            assert not np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(5))
def test_progression_is_monotone_in_pixels(seed: int) -> None:
    t1, t2, t3, t4 = panels(generate(seed=seed))
    assert mean_difference(t1, t2) < mean_difference(t1, t3) < mean_difference(t1, t4)


def test_stage_labels_are_drawn_in_the_corner() -> None:
    case, size = make_case(), 512
    boxes = panel_boxes(size)
    frame = (boxes[0].width, boxes[0].height)
    plain = pixels(draw_backdrop(plan_scene(case, 0), frame, frame))
    corner = (slice(0, frame[1] // 8), slice(0, frame[0] // 8))
    labelled = [cell[corner] for cell in panels(generate(case=case, size=size))]
    for region in labelled:
        assert not np.array_equal(region, plain[corner])
    assert not np.array_equal(labelled[0], labelled[3])  # "t1" and "t4" read differently


# ---------------------------------------------------------------- the controls


def test_copied_panels_are_identical() -> None:
    first, *rest = panels(generate("copied"))
    for cell in rest:
        assert np.array_equal(cell, first)


@pytest.mark.parametrize("size", [512, 101])
def test_shuffled_is_the_good_panels_in_order_t3_t1_t4_t2(size: int) -> None:
    assert SHUFFLED_ORDER == (2, 0, 3, 1)
    good = panels(generate(size=size))
    shuffled = panels(generate("shuffled", size=size))
    for cell, stage in zip(shuffled, SHUFFLED_ORDER, strict=True):
        height = min(cell.shape[0], good[stage].shape[0])
        width = min(cell.shape[1], good[stage].shape[1])
        assert np.array_equal(cell[:height, :width], good[stage][:height, :width])


def test_blank_is_uniform() -> None:
    assert len(np.unique(pixels(generate("blank")).reshape(-1, 3), axis=0)) == 1


def test_three_panels_has_no_centre_gutters() -> None:
    size = 512
    sheet = pixels(generate("three-panels", size=size))
    assert not is_white(sheet[:, size // 2])
    assert not is_white(sheet[size // 2, :])
    white_columns = [x for x in range(size) if is_white(sheet[:, x])]
    assert len(white_columns) == 2 * gutter_width(size)  # two gutters: three columns


def test_collage_has_no_white_full_span_line_near_the_centre() -> None:
    size = 512
    sheet = pixels(generate("collage", size=size))
    near_centre = range(size // 2 - gutter_width(size), size // 2 + gutter_width(size) + 1)
    for i in near_centre:
        assert not is_white(sheet[:, i])
        assert not is_white(sheet[i, :])
