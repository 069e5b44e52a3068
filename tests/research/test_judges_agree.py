"""Two judges on the same stored sheets: paired by image bytes, verdict and score agreement,
per domain and overall, undefined statistics null."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_imagetime.research.agreement.judges import (
    Pair,
    agreement,
    agreement_lines,
    judges_agree,
    pair_judgments,
    stored_judgments,
)
from pytest_imagetime.rubric.facts import RUBRIC_VERSION
from pytest_imagetime.rubric.judgment import Judgment, Verdict
from tests.builders import make_case


def _judgment(c0: int | None, verdicts: tuple[bool | None, ...] = (True, False),
              evaluates: bool = True, forbidden: bool | None = False) -> Judgment:
    return Judgment("vlm", "m", RUBRIC_VERSION, "p", {"C0": c0, "D8": 5},
                    predicates=tuple(Verdict(f"p{n}", v) for n, v in enumerate(verdicts, 1)),
                    forbidden=(Verdict("f1", forbidden),), evaluates_predicates=evaluates)


def _store(run_dir: Path, case_id: str, judgment: Judgment, sha: str = "s",
           name: str | None = None) -> None:
    folder = run_dir / "judgments"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name or case_id}.json").write_text(json.dumps(
        {"case_id": case_id, "image_sha256": sha, "judgment": judgment.to_json()}))


def test_stored_judgments_skip_repeats_and_broken_files(tmp_path: Path) -> None:
    _store(tmp_path, "a", _judgment(7))
    _store(tmp_path, "a", _judgment(1), name="a@r2")
    (tmp_path / "judgments" / "broken.json").write_text("{")
    (tmp_path / "judgments" / "partial.json").write_text('{"case_id": "x"}')
    found = stored_judgments(tmp_path)
    assert list(found) == ["a"]
    assert found["a"][0] == "s" and found["a"][1].scores["C0"] == 7


def test_pairs_need_the_same_image_from_both_judges(tmp_path: Path) -> None:
    model = tmp_path / "procedural"
    kitchen = make_case()
    for case_id in ("kitchen-pour-water-1", "other"):
        _store(model / "vlm", case_id, _judgment(7))
        _store(model / "chain", case_id, _judgment(6))
    _store(model / "vlm", "redrawn", _judgment(7), sha="one")
    _store(model / "chain", "redrawn", _judgment(7), sha="two")
    _store(model / "vlm", "only-a", _judgment(7))
    pairs, unpaired = pair_judgments(model, "vlm", "chain", {kitchen.id: kitchen})
    assert [(p.case_id, p.domain) for p in pairs] == [(kitchen.id, "Kitchen"),
                                                      ("other", "unknown")]
    assert unpaired == ["only-a", "redrawn"]


def test_agreement_counts_verdicts_and_scores() -> None:
    pairs = [Pair("a", "K", _judgment(8, (True, False)), _judgment(8, (True, True))),
             Pair("b", "K", _judgment(4, (None, False)), _judgment(6, (None, False))),
             Pair("c", "K", _judgment(9, evaluates=False), _judgment(2))]
    result = agreement(pairs, dims=("C0",))
    assert result["sheets"] == 3
    assert result["predicates"]["n"] == 4  # the third pair does not evaluate predicates
    assert result["predicates"]["accuracy"] == 75.0
    assert result["forbidden"] == {"n": 2, "accuracy": 100.0,
                                   "kappa": result["forbidden"]["kappa"]}
    assert result["dims"]["C0"]["n"] == 3
    assert result["dims"]["C0"]["mae"] == round((0 + 2 + 7) / 3, 4)


def test_undefined_statistics_are_null() -> None:
    result = agreement([], dims=("C0",))
    assert result["predicates"] == {"n": 0, "accuracy": None, "kappa": None}
    assert result["dims"]["C0"]["spearman"] is None


def test_the_report_and_its_lines(tmp_path: Path) -> None:
    model = tmp_path / "procedural"
    kitchen = make_case()
    _store(model / "vlm", kitchen.id, _judgment(7))
    _store(model / "chain", kitchen.id, _judgment(7))
    _store(model / "chain", "lonely", _judgment(7))
    result = judges_agree(model, "vlm", "chain", {kitchen.id: kitchen}, dims=("C0", "D8"))
    assert list(result["by_domain"]) == ["Kitchen"]
    assert result["unpaired"] == ["lonely"]
    lines = agreement_lines(result)
    assert lines[0] == (f"judges agree: vlm vs chain on {model}: 1 sheets judged by both, "
                        "1 not")
    assert lines[1].split()[:2] == ["domain", "sheets"]
    assert lines[1].endswith("C0 MAE   C0 rho   D8 MAE   D8 rho")
    assert lines[2].split()[:6] == ["Kitchen", "1", "2", "100.0", "1.00", "1"]
    assert lines[3].split()[0] == "all"
    assert "0.00" in lines[3].split() and "n/a" in lines[3].split()
