"""The diffusers presets: lookup by name, the generic one, and the presets' own consistency."""

from __future__ import annotations

import pytest

from pytest_imagetime.models.diffusers_presets import (
    AUTO_PIPELINE,
    GENERIC,
    PRESETS,
    edit_presets,
    preset,
)


def test_diffusers_itself_is_the_generic_preset() -> None:
    assert preset("diffusers") is GENERIC
    assert GENERIC.repo is None and GENERIC.pipeline == AUTO_PIPELINE


def test_every_preset_is_found_by_its_name() -> None:
    for name, entry in PRESETS.items():
        assert preset(name) is entry


def test_an_unknown_preset_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown diffusers preset 'flux-pro'; known: "
                                         r"diffusers, flux-dev, flux-kontext, ") as raised:
        preset("flux-pro")
    assert all(name in str(raised.value) for name in PRESETS)


def test_edit_presets_are_those_that_take_an_image() -> None:
    assert set(edit_presets()) == {n for n, p in PRESETS.items() if p.edit}
    assert "qwen-image-edit" in edit_presets() and "sdxl" not in edit_presets()


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_each_preset_is_consistent(name: str) -> None:
    entry = PRESETS[name]
    assert entry.repo and "/" in entry.repo
    assert entry.pipeline.endswith("Pipeline")
    assert entry.dtype in ("auto", "bfloat16", "float16", "float32")
    assert entry.steps is None or entry.steps > 0
    assert entry.size is None or entry.size % 16 == 0
    assert not entry.needs_image or entry.edit  # an edit-only model takes an image
    assert (entry.true_cfg is None) or entry.negative_prompt is not None
