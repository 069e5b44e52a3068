"""The whole-prompt judge's exemplar files read directly: columns, verdicts, categories, the
instructed style's analyses and the images (tempviz/exemplars.py)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.tempviz.examples import ExamplesError
from pytest_imagetime.tempviz.exemplars import load_exemplars

HEADER = "image,prompt,cue,answer,analysis,category\n"


def _png(path: Path, colour: tuple[int, int, int] = (200, 10, 10)) -> Path:
    Image.new("RGB", (8, 8), colour).save(path)
    return path


def _csv(tmp_path: Path, *rows: str, header: str = HEADER) -> Path:
    path = tmp_path / "exemplars.csv"
    path.write_text(header + "".join(row + "\n" for row in rows), encoding="utf-8")
    return path


def test_rows_become_exemplars_in_file_order(tmp_path: Path) -> None:
    image = _png(tmp_path / "a.png")
    _png(tmp_path / "b.png", (0, 0, 0))
    path = _csv(tmp_path, "a.png,a cat at two,two years,Yes,young,Animals",
                "b.png,Rome in 1500,1500,false,,")
    first, second = load_exemplars(path, "simple")
    assert (first.prompt, first.cue, first.answer, first.analysis, first.category) == (
        "a cat at two", "two years", "yes", "young", "Animals")
    assert (second.answer, second.category, second.analysis) == ("no", "", "")
    assert first.image_url == "data:image/png;base64," + base64.b64encode(
        image.read_bytes()).decode("ascii")


def test_json_lines_and_absolute_image_paths_are_read(tmp_path: Path) -> None:
    image = _png(tmp_path / "elsewhere.png")
    path = tmp_path / "exemplars.jsonl"
    path.write_text(json.dumps({"image": str(image), "prompt": "p", "answer": "1",
                                "analysis": "fine"}) + "\n", encoding="utf-8")
    (exemplar,) = load_exemplars(path, "instructed")
    assert exemplar.answer == "yes" and exemplar.cue == "" and exemplar.analysis == "fine"
    assert exemplar.image_url.startswith("data:image/png;base64,")


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    path = _csv(tmp_path, "a.png,p", header="image,prompt\n")
    with pytest.raises(ExamplesError, match="no column 'answer'"):
        load_exemplars(path, "simple")


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ExamplesError, match=r"absent\.csv: no such file"):
        load_exemplars(tmp_path / "absent.csv", "simple")


def test_an_answer_other_than_yes_or_no_names_its_line(tmp_path: Path) -> None:
    _png(tmp_path / "a.png")
    path = _csv(tmp_path, "a.png,p,c,yes,,", "a.png,p,c,maybe,,")
    with pytest.raises(ExamplesError, match=r"exemplars.csv:3: answer 'maybe': use yes or no"):
        load_exemplars(path, "simple")


def test_a_category_outside_tempviz_is_refused_with_the_categories(tmp_path: Path) -> None:
    _png(tmp_path / "a.png")
    path = _csv(tmp_path, "a.png,p,c,yes,,Cars")
    with pytest.raises(ExamplesError, match=r":2: category 'Cars' is not one of Animals, "
                                            r"Artworks, Buildings, Landscapes, Maps"):
        load_exemplars(path, "simple")


def test_the_instructed_style_needs_every_analysis(tmp_path: Path) -> None:
    _png(tmp_path / "a.png")
    path = _csv(tmp_path, "a.png,p,c,yes,,")
    assert load_exemplars(path, "simple")[0].analysis == ""
    with pytest.raises(ExamplesError, match=":2: empty 'analysis'"):
        load_exemplars(path, "instructed")


def test_an_unreadable_image_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "broken.png").write_bytes(b"not a picture")
    path = _csv(tmp_path, "broken.png,p,c,no,,")
    with pytest.raises(ExamplesError, match=r"exemplars.csv:2: cannot read the image"):
        load_exemplars(path, "simple")
    with pytest.raises(ExamplesError, match="cannot read the image"):
        load_exemplars(_csv(tmp_path, "missing.png,p,c,no,,"), "simple")


def test_an_image_in_another_format_is_refused(tmp_path: Path) -> None:
    Image.new("RGB", (8, 8)).save(tmp_path / "a.bmp")
    path = _csv(tmp_path, "a.bmp,p,c,no,,")
    with pytest.raises(ExamplesError, match="is BMP; use PNG, JPEG"):
        load_exemplars(path, "simple")


def test_a_file_without_rows_has_no_exemplars(tmp_path: Path) -> None:
    path = _csv(tmp_path)
    with pytest.raises(ExamplesError, match=r"exemplars.csv: no exemplars"):
        load_exemplars(path, "simple")
