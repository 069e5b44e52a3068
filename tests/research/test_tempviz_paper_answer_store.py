"""``research/tempviz_paper/answer_store.py`` and ``tally.py``: which stored file is an
answer, where it is kept, the image bytes its key holds, and the run's counts and costs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.research.tempviz_paper.answer_store import (
    ANSWER_FORMAT,
    AnswerStore,
    Slot,
    image_digest,
    image_url,
)
from pytest_imagetime.research.tempviz_paper.tally import NotAsked, Tally
from pytest_imagetime.rubric.judgment import JudgeError


def _usable(value: object) -> bool:
    return value in ("yes", "no")


def test_a_kept_answer_is_read_back_with_its_cost(tmp_path: Path) -> None:
    slot = AnswerStore(tmp_path).slot({"text": "q"})
    slot.keep("yes", "Yes.", 0.25, {"id": "Maps-0"})
    stored = slot.stored(_usable)
    assert stored is not None and (stored.value, stored.cost_usd) == ("yes", 0.25)
    record = json.loads(slot.path.read_text())  # type: ignore[union-attr]
    assert (record["format"], record["id"], record["content"]) == (ANSWER_FORMAT, "Maps-0",
                                                                   "Yes.")


@pytest.mark.parametrize("record", [
    "not json", '{"format": "other/1", "key": "KEY", "value": "yes"}',
    '{"format": "FORMAT", "key": "another", "value": "yes"}',
    '{"format": "FORMAT", "key": "KEY", "value": "maybe"}',
    '{"format": "FORMAT", "key": "KEY"}', "[]"])
def test_a_damaged_foreign_or_unusable_file_is_no_answer(tmp_path: Path, record: str) -> None:
    path = tmp_path / "KEY.json"
    path.write_text(record.replace("FORMAT", ANSWER_FORMAT))
    assert Slot(path, "KEY").stored(_usable) is None


def test_a_record_without_a_known_cost_has_an_unknown_cost(tmp_path: Path) -> None:
    path = tmp_path / "KEY.json"
    path.write_text(json.dumps({"format": ANSWER_FORMAT, "key": "KEY", "value": "no",
                                "cost_usd": None}))
    stored = Slot(path, "KEY").stored(_usable)
    assert stored is not None and stored.cost_usd is None


def test_the_store_folder_is_given_beside_the_images_or_none(tmp_path: Path) -> None:
    image = tmp_path / "flux" / "tempviz" / "images" / "Maps-0.png"
    beside = AnswerStore(None, "paper-judge").slot({"text": "q"}, image)
    assert beside.path == tmp_path / "flux" / "tempviz" / "paper-judge" / f"{beside.key}.json"
    given = AnswerStore(tmp_path / "s", "paper-judge").slot({"text": "q"}, image)
    assert given.path == tmp_path / "s" / f"{given.key}.json" and given.key == beside.key
    off = AnswerStore(tmp_path, enabled=False).slot({"text": "q"}, image)
    assert off.path is None and off.stored(_usable) is None
    off.keep("yes", "yes", 0.0, {})  # writes nothing
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match="needs a store folder"):
        AnswerStore(None, "paper-vqa").slot({"text": "q"})


def test_the_key_changes_with_every_part(tmp_path: Path) -> None:
    store = AnswerStore(tmp_path)
    keys = {store.slot(parts).key for parts in (
        {"text": "q", "model": "a"}, {"text": "q", "model": "b"}, {"text": "r", "model": "a"})}
    assert len(keys) == 3


def test_the_image_is_sent_as_the_bytes_its_key_holds(tmp_path: Path) -> None:
    png = tmp_path / "Maps-0.png"
    Image.new("RGB", (4, 4), (1, 2, 3)).save(png)
    digest = image_digest(png)
    assert image_url(png, digest).startswith("data:image/png;base64,")
    Image.new("RGB", (4, 4), (9, 9, 9)).save(png)
    with pytest.raises(JudgeError, match="changed while it was asked about"):
        image_url(png, digest)
    jpeg = tmp_path / "Maps-1.png"
    Image.new("RGB", (4, 4)).save(jpeg, format="JPEG")
    assert image_url(jpeg, image_digest(jpeg)).startswith("data:image/png;base64,")


def test_the_tally_counts_spends_and_stops_at_the_budget(tmp_path: Path) -> None:
    tally = Tally("m", priced=True, max_cost_usd=0.5)
    slot = AnswerStore(tmp_path).slot({"text": "q"})
    assert tally.ask(slot, lambda: ("yes", "yes", 0.5), {}) == "yes"
    with pytest.raises(NotAsked, match=r"^not asked: --max-cost reached \(\$0.5000 of"):
        tally.ask(slot, lambda: ("no", "no", 0.5), {})
    tally.fail()
    stored = slot.stored(_usable)
    assert stored is not None and tally.reuse(stored) == "yes"
    assert tally.summary() == ("asked 1, reused 1 from the store, errors 1, spent $0.5000, "
                               "$0.5000 reused from the store")
    assert tally.warnings() == []


def test_max_cost_without_a_price_is_refused() -> None:
    with pytest.raises(ValueError, match="--max-cost needs the price of 'm'"):
        Tally("m", priced=False, max_cost_usd=1.0)
