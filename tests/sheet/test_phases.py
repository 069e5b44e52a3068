"""Change between panels: copies, order, moving subjects, collages and panoramas
(sheet/phases.py)."""

from __future__ import annotations

import pytest

from pytest_imagetime.sheet.metrics import analyze
from tests.photo_sheets import (
    PATHS,
    PHOTOS,
    UNRELATED,
    copied_sheet,
    jpeg,
    measured,
    moving_subject_sheet,
    panorama_sheet,
    unrelated_sheet,
)


@pytest.mark.parametrize(("background", "subject"), [("astronaut", "coffee"),
                                                     ("camera", "rocket"),
                                                     ("coffee", "chelsea")])
def test_a_small_moving_subject_is_a_change_not_a_copy(background: str, subject: str) -> None:
    m = analyze(moving_subject_sheet(background, subject, size=0.08, step=0.04))
    assert not any(m.copied_pairs)
    assert min(m.changes) > 0.05
    assert m.implied_labels() == ()


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
