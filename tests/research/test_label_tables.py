"""Label tables: a judge's stored answers as a table, filled answer files read back and
checked, and the blind HTML form with its items.csv."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.cases.model import Case
from pytest_imagetime.research.labels.export import (
    FormItem,
    build_items,
    export,
    form_html,
    labellable,
    sheet_png,
    storage_key,
)
from pytest_imagetime.research.labels.importing import import_answers
from pytest_imagetime.research.labels.judge_table import judge_rows
from pytest_imagetime.research.labels.runs import RunError, RunItem
from pytest_imagetime.rubric.facts import C_DIMS
from tests.builders import make_case

CASE = make_case()


def _item(run_dir: Path, case_id: str = CASE.id, model: str = "procedural",
          judge: str = "vlm", **data: Any) -> RunItem:
    values = {"model": model, "setting": "prompt-only", "case_id": case_id, "domain": "Kitchen",
              "judge": judge, "scores": {"C0": 8, "C1": None}, "gate_pass": True}
    values.update(data)
    return RunItem(run_dir, values)


def _judgment(run_dir: Path, case_id: str, judgment: dict[str, Any]) -> None:
    folder = run_dir / "judgments"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{case_id}.json").write_text(json.dumps({"judgment": judgment}))


# ---------------------------------------------------------------- a judge's table


def test_a_judges_row_holds_its_gate_scores_and_verdicts(tmp_path: Path) -> None:
    run = tmp_path / "procedural" / "vlm"
    _judgment(run, CASE.id, {"evaluates_predicates": True, "predicates": [
        {"id": "p1", "value": True}, {"id": "p2", "value": False}, {"id": "p3", "value": None},
        {"id": "notes", "value": True}]})
    table = judge_rows([_item(run, predicates_checked=True)])
    (row,) = table.rows
    assert (row["annotator"], row["valid_sheet"], row["C0"], row["C1"]) == ("vlm", "yes", "8",
                                                                            "")
    assert (row["p1"], row["p2"], row["p3"]) == ("yes", "no", "unsure")
    assert row["notes"] == ""  # an id naming a fixed column is left out
    assert table.predicates == {"p1", "p2", "p3"}
    assert table.without_verdicts == 0


def test_judges_without_verdicts_are_counted(tmp_path: Path) -> None:
    table = judge_rows([_item(tmp_path, gate_pass=None),
                        _item(tmp_path, "other", predicates_checked=True)])
    assert table.without_verdicts == 2
    assert table.rows[0]["valid_sheet"] == ""
    assert set(C_DIMS) <= set(table.rows[0])


def test_one_item_judged_twice_by_one_judge_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RunError, match=f"{CASE.id} of procedural judged by vlm in both "):
        judge_rows([_item(tmp_path / "a"), _item(tmp_path / "b")])


# ---------------------------------------------------------------- answers read back


def _answers(path: Path, rows: list[str],
             head: str = "item,model,case_id,domain,annotator,valid_sheet,p1,p2,C0,C1,notes"
             ) -> Path:
    path.write_text("\n".join([head, *rows]) + "\n")
    return path


def test_answers_are_read_in_their_one_spelling(tmp_path: Path) -> None:
    path = _answers(tmp_path / "a.csv", ["1,m,kitchen-pour-water-1,,ann,Y,true,unsure,7,n/a,ok",
                                         "2,m,kitchen-pour-water-1,,bob,,,,,,"])
    imported = import_answers([path], {CASE.id: CASE})
    assert imported.problems == [] and imported.skipped == 1
    (row,) = imported.rows
    assert row == {"item": "1", "model": "m", "case_id": CASE.id, "domain": "Kitchen",
                   "annotator": "ann", "notes": "ok", "valid_sheet": "yes", "p1": "yes",
                   "p2": "unsure", **dict.fromkeys(C_DIMS, ""), "C0": "7"}
    assert imported.predicates == {"p1", "p2", "p3", "p4"}


def test_one_annotator_can_be_kept(tmp_path: Path) -> None:
    path = _answers(tmp_path / "a.csv", ["1,m,kitchen-pour-water-1,,ann,yes,,,,,",
                                         "1,m,kitchen-pour-water-1,,bob,no,,,,,"])
    assert [r["annotator"] for r in import_answers([path], {CASE.id: CASE}, "bob").rows] == [
        "bob"]


def test_every_bad_answer_is_named_with_its_line(tmp_path: Path) -> None:
    path = _answers(tmp_path / "a.csv", [
        "1,m,kitchen-pour-water-1,,ann,maybe,often,,11,x,",
        "2,m,nope,,ann,yes,,,,,",
        "3,m,kitchen-pour-water-1,,,yes,,,,,",
        "4,m,kitchen-pour-water-1,,cy,yes,,,,,",
        "5,m,kitchen-pour-water-1,,cy,no,,,,,",
    ])
    problems = import_answers([path], {CASE.id: CASE}).problems
    assert problems == [
        f"{path}:2: valid_sheet 'maybe' is not yes or no",
        f"{path}:2: p1 'often' is not yes, no or unsure",
        f"{path}:2: C0 '11' is not an integer from 0 to 10",
        f"{path}:2: C1 'x' is not an integer from 0 to 10",
        f"{path}:3: unknown case id 'nope'",
        f"{path}:4: no annotator name",
        f"{path}:6: cy answered m / kitchen-pour-water-1 already at {path}:5",
    ]


def test_a_predicate_the_case_lacks_and_a_table_without_keys(tmp_path: Path) -> None:
    path = _answers(tmp_path / "a.csv", ["1,m,kitchen-pour-water-1,,ann,yes,yes"],
                    head="item,model,case_id,domain,annotator,valid_sheet,p9")
    assert import_answers([path], {CASE.id: CASE}).problems == [
        f"{path}:2: case {CASE.id} has no predicate 'p9' (its predicates: p1, p2, p3, p4)"]
    keyless = _answers(tmp_path / "b.csv", ["x"], head="something")
    (problem,) = import_answers([keyless], {}).problems
    assert "model" in problem and str(keyless) in problem


# ---------------------------------------------------------------- the form


def _stored(out: Path, model: str, case_id: str, size: int = 64) -> RunItem:
    run = out / model / "vlm"
    images = out / model / "images"
    images.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (size, size), (200, 10, 10)).save(images / f"{case_id}.png")
    return _item(run, case_id, model)


def test_sheets_are_shrunk_to_the_forms_size(tmp_path: Path) -> None:
    Image.new("RGBA", (300, 150)).save(tmp_path / "big.png")
    with Image.open(io.BytesIO(sheet_png(tmp_path / "big.png", 100))) as small:
        assert small.size == (100, 50) and small.mode == "RGB"


def test_labellable_items_have_a_sheet_once_per_model_and_case(tmp_path: Path) -> None:
    kept = _stored(tmp_path, "m", CASE.id)
    again = _item(tmp_path / "m" / "pixel", CASE.id, "m", judge="pixel")
    no_sheet = _item(tmp_path / "x" / "vlm", CASE.id, "x")
    assert labellable([kept, again, no_sheet]) == [kept]


def test_items_of_unknown_or_edited_cases_are_refused(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="no stored sheets in these runs to label"):
        build_items([], {}, 5, 0, 64)
    item = _stored(tmp_path, "m", CASE.id)
    with pytest.raises(RunError, match=r"1 case ids not among the loaded cases .*: "
                                       r"kitchen-pour-water-1"):
        build_items([item], {}, 5, 0, 64)
    edited = _item(tmp_path / "m" / "vlm", CASE.id, "m", case_sha256="old")
    with pytest.raises(RunError, match="1 cases differ from the text their sheets were made"):
        build_items([edited], {CASE.id: CASE}, 5, 0, 64)


def test_the_form_is_blind_self_contained_and_keyed(tmp_path: Path) -> None:
    cases: dict[str, Case] = {CASE.id: CASE}
    items = [_stored(tmp_path / "runs", "secret-model", CASE.id)]
    form, table = export(items, cases, tmp_path / "form", size=5, seed=1, annotator="<ann>")
    page = form.read_text()
    assert "data:image/png;base64," in page
    assert "&lt;ann&gt;" in page and "<ann>" not in page
    assert "http://" not in page and "https://" not in page
    visible = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    assert "secret-model" not in visible  # only the answer file's keys name the model
    rows = table.read_text().splitlines()
    assert rows[0].split(",")[:6] == ["item", "model", "case_id", "domain", "annotator",
                                      "valid_sheet"]
    assert rows[1].startswith(f"1,secret-model,{CASE.id},Kitchen,<ann>,")
    assert rows[1].count("n/a") == sum(1 for d in C_DIMS if d not in build_items(
        items, cases, 5, 1, 64)[0].dims)


def test_script_data_cannot_close_its_element() -> None:
    item = FormItem(1, "m</script><!--", CASE.id, "Kitchen", "p", CASE.predicates, ("C0",),
                    b"")
    page = form_html([item], "a", "k")
    script = page[page.index("<script"):]
    assert "m</script>" not in script and "\\u003c/script\\u003e" in script


def test_the_storage_key_follows_the_sample_and_annotator() -> None:
    item = FormItem(1, "m", CASE.id, "Kitchen", "p", (), (), b"")
    other = FormItem(1, "n", CASE.id, "Kitchen", "p", (), (), b"")
    key = storage_key([item], 1, "ann")
    assert len(key) == 16 and key == storage_key([item], 1, "ann")
    assert len({key, storage_key([item], 2, "ann"), storage_key([item], 1, "bob"),
                storage_key([other], 1, "ann")}) == 4
