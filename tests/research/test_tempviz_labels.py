"""TempViz human labels: the balanced 500-image sample, the form with the paper's Q1-Q3, and
``imagetime agree`` on what the form gives back."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.cli import main
from pytest_imagetime.research.labels.tempviz_form import QUESTIONS, balanced_counts
from tests.tempviz_data import ROWS, write_tables

MODELS = ("flux-dev", "sdxl")


def test_balanced_counts_share_equally_and_pass_on_what_a_cell_lacks() -> None:
    cells = {(c, m): 400 for c in ("Animals", "Artworks", "Buildings", "Landscapes", "Maps")
             for m in ("FLUX", "SDXL-B", "SDXL-T", "SDv1.5", "SDv3.5")}
    assert set(balanced_counts(cells, 500).values()) == {20}  # the paper's 500: 20 a cell
    cells[("Maps", "FLUX")] = 5
    counts = balanced_counts(cells, 500)
    assert counts[("Maps", "FLUX")] == 5 and sum(counts.values()) == 500
    assert max(counts.values()) - min(v for k, v in counts.items()
                                      if k != ("Maps", "FLUX")) <= 1
    assert sum(balanced_counts({("A", "m"): 3}, 10).values()) == 3


@pytest.fixture
def out(tmp_path: Path) -> Path:
    for model in MODELS:
        folder = tmp_path / "reports" / model / "tempviz" / "images"
        folder.mkdir(parents=True)
        for category, rows in ROWS.items():
            for row in rows:
                item = f"{category}-{row[0]}"
                Image.new("RGB", (12, 12), (len(item) * 9, 10, 99)).save(folder / f"{item}.png")
                (folder / f"{item}.json").write_text(json.dumps({"model": model}))
    return tmp_path / "reports"


def test_label_export_form_and_agree_on_its_answers(
        out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_tables(tmp_path / "tempviz")
    form_dir = tmp_path / "form"
    assert main(["tempviz", "label-export", str(out), "--data", str(data), "--sample", "10",
                 "--seed", "3", "-o", str(form_dir), "--annotator", "alice"]) == 0
    with (form_dir / "items.csv").open(newline="") as fh:
        items = list(csv.DictReader(fh))
    assert list(items[0]) == ["item", "model", "id", "category", "index", "promptcategory",
                              "annotator", "q1", "q2", "q3", "notes"]
    cells = {(r["category"], r["model"]) for r in items}
    assert len(items) == 10 and len(cells) == 10  # 5 categories x 2 models, one each
    html = (form_dir / "form.html").read_text()
    assert all(question in html for question in QUESTIONS.values())
    assert "Did the model apply the required temporal knowledge correctly?" in html
    assert "Expected appearance:</b> ruined, rubble" in html or "Buildings-" not in html
    assert "flux-dev" not in html.split('<script type="application/json"')[0]  # blind
    again = tmp_path / "again"
    assert main(["tempviz", "label-export", str(out), "--data", str(data), "--sample", "10",
                 "--seed", "3", "-o", str(again), "--annotator", "alice"]) == 0
    assert (again / "items.csv").read_bytes() == (form_dir / "items.csv").read_bytes()
    # alice fills items.csv in a spreadsheet; the judge's answers.csv of the suite
    filled = tmp_path / "alice.csv"
    with filled.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(items[0]))
        writer.writeheader()
        writer.writerows({**r, "q1": "yes", "q2": "yes", "q3": "yes" if n % 2 else "no"}
                         for n, r in enumerate(items))
    answers = tmp_path / "answers.csv"
    with answers.open("w", newline="") as fh:
        plain = csv.writer(fh)
        plain.writerow(["model", "judge", "id", "category", "index", "q1", "q2", "q3",
                         "q2_and_q3"])
        plain.writerows([r["model"], "j", r["id"], r["category"], r["index"], "yes", "yes",
                          "yes", "yes"] for r in items)
    capsys.readouterr()
    assert main(["agree", str(filled), str(answers), "--on", "model,category,index",
                 "--label", "q3", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["overall"]["n"] == 10 and result["overall"]["accuracy"] == 50.0
    assert main(["tempviz", "prf", str(filled), str(answers), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["comparisons"]["q2_and_q3 vs q3"]["rows"]
    assert rows["overall"]["n"] == 10


def test_label_export_without_matching_rows_exits_2(
        out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_tables(tmp_path / "tempviz", ["Maps"])
    for png in out.glob("*/tempviz/images/Maps-*.png"):
        png.unlink()
    assert main(["tempviz", "label-export", str(out), "--data", str(data), "-o",
                 str(tmp_path / "f")]) == 2
    assert "no stored TempViz image has a row" in capsys.readouterr().err


def test_reference_links_come_from_every_golden_record_column(tmp_path: Path) -> None:
    from pytest_imagetime.research.labels.tempviz_form import references

    table = tmp_path / "Artworks.csv"
    table.write_text('index,goldenrecordImages,prompt,goldenrecordImages\n'
                     '0,"https://a.org/x.jpg,https://b.org/y",p,"goldenRecordImages/z.jpg"\n')
    assert references(table, "0") == ("https://a.org/x.jpg", "https://b.org/y")
    assert references(table, "9") == ()


@pytest.mark.slow
def test_tempviz_form_in_a_browser_round_trip(out: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from tests.research.test_labels import _answer, _chrome, _wait_for_file

    data = write_tables(tmp_path / "tempviz")
    assert main(["tempviz", "label-export", str(out), "--data", str(data), "--sample", "3",
                 "-o", str(tmp_path / "form")]) == 0
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    chrome = _chrome(tmp_path / "profile", downloads)
    try:
        chrome.get((tmp_path / "form" / "form.html").resolve().as_uri())
        assert chrome.find_element(By.ID, "progress").text == "0 of 3 items answered"
        chrome.find_element(By.ID, "annotator").send_keys("dana")
        for field, value in (("q1", "yes"), ("q2", "yes"), ("q3", "no")):
            _answer(chrome, 1, field, value)
        _answer(chrome, 2, "q2", "no")
        assert chrome.find_element(By.ID, "progress").text == "1 of 3 items answered"
        chrome.find_element(By.ID, "download").click()
        with _wait_for_file(downloads).open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    finally:
        chrome.quit()
    with (tmp_path / "form" / "items.csv").open(newline="") as fh:
        items = list(csv.DictReader(fh))
    assert [r["id"] for r in rows] == [r["id"] for r in items]
    assert list(rows[0]) == list(items[0])
    assert {k: rows[0][k] for k in ("annotator", "q1", "q2", "q3")} == {
        "annotator": "dana", "q1": "yes", "q2": "yes", "q3": "no"}
    assert rows[0]["model"] == items[0]["model"] and rows[0]["category"] == items[0]["category"]
    assert (rows[1]["q1"], rows[1]["q2"], rows[1]["q3"]) == ("", "no", "")
