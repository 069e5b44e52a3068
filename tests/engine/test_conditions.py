"""What an item asserts: each unmet condition on its own line, and the explanation shown."""

from __future__ import annotations

from typing import Any

from pytest_imagetime.engine.conditions import explain, unmet_conditions
from pytest_imagetime.engine.record import ItemRecord
from pytest_imagetime.engine.runner import ItemOutcome
from pytest_imagetime.rubric.caps import AppliedCap
from pytest_imagetime.rubric.facts import GATE_C0_MIN, LEVEL_KEYS, RUBRIC_VERSION
from pytest_imagetime.rubric.judgment import Judgment, Verdict
from pytest_imagetime.scoring.item import ItemScores
from tests.builders import make_case

CASE = make_case()


def _outcome(c0: int | None = 8, overall: float | None = 8.0, evaluates: bool = False,
             predicates: tuple[Verdict, ...] = (), forbidden: tuple[Verdict, ...] = (),
             caps: tuple[AppliedCap, ...] = (), **record: Any) -> ItemOutcome:
    scores = {"C0": c0, "C1": 7}
    fields: dict[str, Any] = {
        "key": f"{CASE.id}[procedural]", "case_id": CASE.id, "case_file": "test.yaml",
        "domain": "Kitchen", "subcategory": "Pouring and mixing", "concept": "pour water",
        "difficulty": "easy", "variant": 1, "probed_levels": ("L0",), "constraint": False,
        "model": "procedural", "judge": "pixel", "setting": "prompt-only", "run_dir": "out",
        "scores": scores, "overall": overall, "c_mean": 7.5, "d_mean": None,
        "tree": {"gate": 1.0, "L0": 7.5}, "image": "out/sheet.png"}
    fields.update(record)
    judgment = Judgment("pixel", "m", RUBRIC_VERSION, None, scores, predicates=predicates,
                        forbidden=forbidden, evaluates_predicates=evaluates)
    return ItemOutcome(record=ItemRecord(**fields), judgment=judgment, caps=caps,
                       item_scores=ItemScores(7.5, None, overall, {}, True))


def test_an_item_that_meets_everything_has_no_unmet_condition() -> None:
    assert unmet_conditions(CASE, _outcome(), pass_threshold=6.0) == []


def test_the_layout_gate_needs_c0_at_its_minimum() -> None:
    assert unmet_conditions(CASE, _outcome(c0=GATE_C0_MIN), 6.0) == []
    (line,) = unmet_conditions(CASE, _outcome(c0=GATE_C0_MIN - 1), 6.0)
    assert line.startswith(f"layout gate: C0 = {GATE_C0_MIN - 1} (needs >= {GATE_C0_MIN})")
    (line,) = unmet_conditions(CASE, _outcome(c0=None), 6.0)
    assert line.startswith("layout gate: C0 = None")


def test_overall_below_the_threshold_or_missing_fails() -> None:
    assert unmet_conditions(CASE, _outcome(overall=6.0), 6.0) == []
    assert unmet_conditions(CASE, _outcome(overall=5.994), 6.0) == [
        "Overall 5.99 is below the pass threshold 6"]
    assert unmet_conditions(CASE, _outcome(overall=None), 6.5) == [
        "Overall none is below the pass threshold 6.5"]


def test_predicates_and_forbidden_states_count_only_for_judges_that_check_them() -> None:
    predicates = (Verdict("p1", True), Verdict("p2", False, "jug upright"), Verdict("p3", None))
    forbidden = (Verdict("f1", True, "water at t1"),)
    assert unmet_conditions(CASE, _outcome(predicates=predicates, forbidden=forbidden),
                            6.0) == []
    unmet = unmet_conditions(CASE, _outcome(evaluates=True, predicates=predicates,
                                            forbidden=forbidden), 6.0)
    assert unmet == [
        "predicate p2 (t2) not satisfied: the jug is tilted [judge: jug upright]",
        "predicate p3 (t3) undecided: the glass is half full",
        "forbidden state f1 observed: water in the glass at t1 [judge: water at t1]",
    ]
    undecided = unmet_conditions(CASE, _outcome(evaluates=True,
                                                forbidden=(Verdict("f1", None),)), 6.0)
    assert undecided == ["forbidden state f1 not ruled out: water in the glass at t1"]


def test_each_applied_cap_is_a_condition() -> None:
    cap = AppliedCap("C3-cap", "a copied panel", ("copied_panels",), {"C3": (8, 4)})
    assert unmet_conditions(CASE, _outcome(caps=(cap,)), 6.0) == [f"cap {cap.describe()}"]


def test_the_explanation_lists_the_conditions_and_the_scores() -> None:
    outcome = _outcome(c0=2, overall=3.25, labels=("copied_panels",))
    unmet = unmet_conditions(CASE, outcome, 6.0)
    text = explain(CASE, outcome, unmet)
    lines = text.splitlines()
    assert lines[0] == f"{CASE.id} [procedural] judged by pixel: 2 conditions not met"
    assert lines[1:3] == [f"  - {u}" for u in unmet]
    assert lines[3].startswith("  scores: C mean 7.50 | D mean - | Overall 3.25 | "
                               "protocol node 1.00 | L0 7.50")
    assert all(f"{k} " in lines[3] for k in LEVEL_KEYS)
    assert lines[4:] == ["  dims: C0=2 C1=7", "  labels: copied_panels",
                         "  image: out/sheet.png"]


def test_one_condition_is_singular_and_no_labels_read_none() -> None:
    outcome = _outcome(overall=1.0)
    text = explain(CASE, outcome, unmet_conditions(CASE, outcome, 6.0))
    assert "1 condition not met" in text.splitlines()[0]
    assert "  labels: none" in text.splitlines()
