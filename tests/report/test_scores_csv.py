"""The scores table beside report.json: one row per item in the header's order, null scores
as empty cells, floats rounded, large runs written whole; and the judge's prompt text."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.report.scores_csv import (
    COLUMNS,
    JUDGE_PROMPT,
    SCORES_CSV,
    score_rows,
    write_run_records,
    write_scores_csv,
)
from pytest_imagetime.rubric.facts import C_DIMS, D_DIMS


def _item(case_id: str = "kitchen-1", **values: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"case_id": case_id, "model": "procedural", "setting": "prompt-only",
                            "judge": "vlm", "judge_model": "gpt-x", "domain": "Kitchen",
                            "difficulty": "easy", "status": "passed",
                            "scores": {"C0": 8, "C1": None, "D0": 6},
                            "confidence": {"C0": 0.912345},
                            "c_mean": 7.333333, "d_mean": None, "overall": 6.66666}
    item.update(values)
    return item


def test_the_header_names_every_dimension_once() -> None:
    assert len(COLUMNS) == len(set(COLUMNS))
    assert [c for c in COLUMNS if c in C_DIMS] == list(C_DIMS)
    assert [c for c in COLUMNS if c in D_DIMS] == list(D_DIMS)
    assert COLUMNS[-3:] == ("c_mean", "d_mean", "overall")


def test_a_row_keeps_the_columns_order_nulls_empty_and_floats_rounded() -> None:
    (row,) = score_rows([_item()])
    values = dict(zip(COLUMNS, row, strict=True))
    assert values["C0"] == 8 and values["C1"] == "" and values["D0"] == 6
    assert values["C0_confidence"] == 0.9123 and values["C1_confidence"] == ""
    assert (values["c_mean"], values["d_mean"], values["overall"]) == (7.3333, "", 6.6667)
    assert values["judge_model"] == "gpt-x"


def test_an_errored_item_has_no_scores() -> None:
    (row,) = score_rows([_item(status="error", scores=None, confidence=None, c_mean=None,
                               overall=None, judge_model=None)])
    values = dict(zip(COLUMNS, row, strict=True))
    assert values["status"] == "error"
    assert all(values[c] == "" for c in COLUMNS[8:])
    assert values["judge_model"] == ""


@pytest.mark.parametrize("count", [0, 1, 400, 1200])  # 1200 rows make three chunks
def test_every_item_is_written_whatever_the_size(tmp_path: Path, count: int) -> None:
    path = tmp_path / SCORES_CSV
    write_scores_csv(path, (_item(f"case-{n:05d}") for n in range(count)))
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == COLUMNS
    assert [r[0] for r in rows[1:]] == [f"case-{n:05d}" for n in range(count)]


def test_the_judges_prompt_is_kept_when_it_has_one(tmp_path: Path) -> None:
    class Prompted:
        def prompt_template(self) -> str:
            return "You judge sheets."

    write_run_records(tmp_path / "a", Prompted(), [_item()])
    assert (tmp_path / "a" / JUDGE_PROMPT).read_text() == "You judge sheets."
    assert len((tmp_path / "a" / SCORES_CSV).read_text().splitlines()) == 2
    write_run_records(tmp_path / "b", object(), [])
    assert not (tmp_path / "b" / JUDGE_PROMPT).exists()
    assert (tmp_path / "b" / SCORES_CSV).read_text().splitlines() == [",".join(COLUMNS)]
