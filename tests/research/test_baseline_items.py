"""The stored images a baseline scores: folders of any shape, prompts found in order, images
of edited cases left out, and rows scored batch by batch."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.cases.model import Case
from pytest_imagetime.research.baselines.items import (
    ImageItem,
    find_items,
    model_dirs,
    model_key,
    read_prompts,
)
from pytest_imagetime.research.baselines.loading import BaselineError
from pytest_imagetime.research.baselines.runs import score_items
from tests.builders import make_case


def _image(model_dir: Path, case_id: str, record: dict[str, object] | None = None) -> Path:
    images = model_dir / "images"
    images.mkdir(parents=True, exist_ok=True)
    path = images / f"{case_id}.png"
    Image.new("RGB", (4, 4), (len(case_id), 0, 0)).save(path)
    if record is not None:
        path.with_suffix(".json").write_text(json.dumps(record))
    return path


def _no_cases() -> Mapping[str, Case]:
    raise AssertionError("no image needed a case")


def test_model_dirs_from_every_kind_of_path(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _image(out / "a", "x")
    _image(out / "b", "x")
    run = out / "a" / "pixel"
    run.mkdir()
    (run / "report.json").write_text("{}")
    assert model_dirs([str(out / "a")]) == [out / "a"]
    assert model_dirs([str(out)]) == [out / "a", out / "b"]
    assert model_dirs([str(run)]) == [out / "a"]
    assert model_dirs([str(run / "report.json"), str(out / "a")]) == [out / "a"]


def test_paths_without_images_are_named(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"nope: no such file or directory"):
        model_dirs([str(tmp_path / "nope")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(BaselineError, match=r"empty: no images/ folder and no run "
                                            r"\(report.json\) in it"):
        model_dirs([str(tmp_path / "empty")])


@pytest.mark.parametrize(("record", "key"), [
    (None, "folder"), ({"model": 3}, "folder"),
    ({"model": "procedural"}, "procedural"),
    ({"model": "procedural", "setting": "scaffold"}, "procedural@scaffold"),
    ({"model": "procedural", "grid": [4, 2]}, "procedural@grid4x2"),
    ({"model": "procedural", "grid": "odd"}, "procedural"),
])
def test_model_keys(record: dict[str, object] | None, key: str) -> None:
    assert model_key(Path("out/folder"), record) == key


def test_prompts_come_from_the_record_then_the_table_then_the_case(tmp_path: Path) -> None:
    case = make_case("kitchen-case")
    model = tmp_path / "m"
    _image(model, "recorded", {"model": "m", "prompt": "the prompt given"})
    _image(model, "tabled", {"model": "m", "prompt": ""})
    _image(model, case.id, {"model": "m", "prompt_sha256": case.prompt_hash})
    _image(model, "edited", {"model": "m"})
    _image(model, "unknown")
    asked: list[int] = []

    def cases() -> Mapping[str, Case]:
        asked.append(1)
        return {case.id: case, "edited": make_case("edited")}

    found = find_items([str(model)], {"tabled": "from the table", "recorded": "not used"},
                       cases)
    prompts = {item.case_id: item.prompt for item in found.items}
    assert prompts == {"recorded": "the prompt given", "tabled": "from the table",
                       case.id: case.prompt, "edited": make_case("edited").prompt}
    assert found.without_prompt == ("m/unknown",)
    assert found.changed == ()
    assert asked == [1]  # the cases are loaded once, and only because some image needed them


def test_an_image_of_an_edited_case_is_left_out(tmp_path: Path) -> None:
    _image(tmp_path / "m", "kitchen-pour-water-1", {"model": "m", "prompt_sha256": "old"})
    found = find_items([str(tmp_path / "m")], {}, lambda: {"kitchen-pour-water-1": make_case()})
    assert found.items == () and found.changed == ("m/kitchen-pour-water-1",)


def test_records_with_their_prompt_never_load_the_cases(tmp_path: Path) -> None:
    _image(tmp_path / "m", "a", {"model": "m", "prompt": "p"})
    assert [i.prompt for i in find_items([str(tmp_path)], {}, _no_cases).items] == ["p"]


def test_two_images_of_one_model_and_case_are_refused(tmp_path: Path) -> None:
    _image(tmp_path / "one", "a", {"model": "same", "prompt": "p"})
    _image(tmp_path / "two", "a", {"model": "same", "prompt": "p"})
    with pytest.raises(BaselineError, match=r"two images for model same, case a: "):
        find_items([str(tmp_path / "one"), str(tmp_path / "two")], {}, _no_cases)


def test_a_prompts_table_needs_its_columns(tmp_path: Path) -> None:
    good = tmp_path / "prompts.csv"
    good.write_text("case_id,prompt\na,first\nb,\n")
    assert read_prompts(good) == {"a": "first"}
    bad = tmp_path / "bad.csv"
    bad.write_text("case,text\na,b\n")
    with pytest.raises(BaselineError, match="case_id"):
        read_prompts(bad)


def test_rows_are_scored_batch_by_batch_in_order(tmp_path: Path) -> None:
    items = [ImageItem("m", f"c{n}", _image(tmp_path / "m", f"c{n}"), f"prompt {n}")
             for n in range(5)]
    chunks: list[int] = []

    def score(images: Sequence[Image.Image], prompts: Sequence[str]) -> list[dict[str, str]]:
        chunks.append(len(images))
        assert all(image.mode == "RGB" for image in images)
        return [{"score": p.split()[1]} for p in prompts]

    rows = score_items(items, score, batch_size=2)
    assert chunks == [2, 2, 1]
    assert rows == [{"model": "m", "case_id": f"c{n}", "score": str(n)} for n in range(5)]


def test_an_unreadable_image_is_named(tmp_path: Path) -> None:
    path = tmp_path / "broken.png"
    path.write_bytes(b"not a png")
    with pytest.raises(BaselineError, match=r"broken.png: cannot read the image: "):
        score_items([ImageItem("m", "c", path, "p")], lambda i, p: [], batch_size=1)
