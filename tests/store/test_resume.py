"""Which stored images and judgments a run reuses (store/resume.py)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from pytest_imagetime.store.judgments import store_judgment
from pytest_imagetime.store.keys import input_key
from pytest_imagetime.store.paths import RunPaths
from pytest_imagetime.store.resume import (
    judgment_name,
    repeat_key,
    reusable_image,
    reusable_judgment,
    reusable_sheet,
)
from pytest_imagetime.store.sheets import store_image


def _paths(tmp_path: Path) -> RunPaths:
    return RunPaths(tmp_path, "procedural", "pixel", "prompt-only")


def test_a_sheet_is_reused_for_its_own_key_unless_regenerating(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    digest = store_image(paths, "case-1", Image.new("RGB", (4, 4)), {"input_key": "k1"})
    found = reusable_sheet(paths, "case-1", "k1", regenerate=False)
    assert found is not None and found.sha256 == digest
    assert reusable_sheet(paths, "case-1", "k2", regenerate=False) is None
    assert reusable_sheet(paths, "case-1", "k1", regenerate=True) is None
    decoded = reusable_image(paths, "case-1", "k1", regenerate=False)
    assert decoded is not None and decoded[0].size == (4, 4) and decoded[1] == digest
    assert reusable_image(paths, "case-1", "k1", regenerate=True) is None


def test_a_judgment_is_reused_for_its_own_key_unless_rejudging(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    store_judgment(paths, "case-1", {"input_key": "j1", "judgment": {}})
    assert reusable_judgment(paths, "case-1", "j1", rejudge=False) is not None
    assert reusable_judgment(paths, "case-1", "j2", rejudge=False) is None
    assert reusable_judgment(paths, "case-1", "j1", rejudge=True) is None


def test_a_judgment_stored_under_a_priced_key_is_taken_and_stored_again(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    judge = {"judge": "vlm", "judge_model": "m"}
    facts = {"image_sha256": "abc", "case_spec_sha256": "def", "setting": "prompt-only",
             "rubric_version": "1"}
    key = repeat_key(input_key({"judge": judge, **facts}), 1)
    name = judgment_name("case-1", 1)
    assert name == "case-1@r2" and judgment_name("case-1", 0) == "case-1"
    store_judgment(paths, name, {"input_key": "old", "judge_config": {
        **judge, "price_usd_per_mtok": [1.0, 2.0]}, **facts, "judgment": {"tokens_in": 5}})
    assert reusable_judgment(paths, name, key, rejudge=False) is None  # no repeat: not looked
    record = reusable_judgment(paths, name, key, rejudge=False, repeat=1)
    assert record is not None and record["input_key"] == key
    assert reusable_judgment(paths, name, key, rejudge=False) is not None  # stored again
    assert reusable_judgment(paths, name, key, rejudge=False, repeat=0) is not None
    # Other inputs than the stored ones: not taken, whatever the price.
    other = repeat_key(input_key({"judge": judge, **facts, "setting": "scaffold"}), 1)
    assert reusable_judgment(paths, name, other, rejudge=False, repeat=1) is None
