"""The review rules of ``case_rules`` and ``lint``: a bad and a good example of each, the
located warning `imagetime lint` prints, and the invariants of the counting helpers."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.cases import rules as case_rules
from pytest_imagetime.cases.lint import (
    CROSS_DOMAIN_SIMILARITY,
    cross_domain_problems,
    scene_words,
    sibling_flag_problems,
)
from pytest_imagetime.cases.loading import load_case_file
from pytest_imagetime.cases.model import Case, Predicate, Setup
from pytest_imagetime.cases.rules import (
    CHARS_PER_TOKEN,
    PROMPT_TOKEN_BUDGET,
    Finding,
    estimated_tokens,
    needs_reading,
)
from pytest_imagetime.cli import main
from tests.builders import PROMPT, case_dict, make_case, write_case_file


def _with(case: Case | None = None, **changes: Any) -> Case:
    return dataclasses.replace(case or make_case(), **changes)


def _messages(findings: list[Finding]) -> str:
    return "\n".join(f.message for f in findings)


# ---------------------------------------------------------------- prompt length


def test_prompt_over_the_token_budget_is_flagged() -> None:
    long = PROMPT + " A" * int(PROMPT_TOKEN_BUDGET * CHARS_PER_TOKEN)
    findings = list(case_rules.prompt_length(_with(prompt=long)))
    assert [f.field for f in findings] == [("prompt",)]
    assert f"over the {PROMPT_TOKEN_BUDGET}" in findings[0].message
    assert not list(case_rules.prompt_length(make_case()))


@given(st.text(max_size=3000))
def test_token_estimate_never_undercounts_a_char_per_token_ratio(text: str) -> None:
    assert estimated_tokens(text) * CHARS_PER_TOKEN >= len(text)
    assert estimated_tokens(text + "word") >= estimated_tokens(text)


# ---------------------------------------------------------------- vague keep sentence


@pytest.mark.parametrize("sentence", ["Keep everything else identical.",
                                      "Keep the two latches and all else identical.",
                                      "keep everything else, style and camera the same"])
def test_vague_keep_sentence_is_flagged(sentence: str) -> None:
    findings = list(case_rules.vague_keep(_with(prompt=f"{PROMPT} {sentence}")))
    assert len(findings) == 1 and "names nothing a judge can check" in findings[0].message


def test_named_anchors_and_other_uses_of_else_pass() -> None:
    named = f"{PROMPT} Keep the jug, the towel, the lighting and the camera identical."
    description = f"{PROMPT} Everything else, the bunny's body included, is black."
    assert not list(case_rules.vague_keep(_with(prompt=named)))
    assert not list(case_rules.vague_keep(_with(prompt=description)))


# ---------------------------------------------------------------- template against concept


def test_same_scene_sentence_contradicts_a_transition() -> None:
    same = PROMPT.replace("One square image", "One square image showing four moments of the "
                                              "same scene,")
    transition = _with(concept="transition between scenes", prompt=same)
    findings = list(case_rules.template_against_concept(transition))
    assert len(findings) == 1 and "goes from one scene to another" in findings[0].message
    fixed = _with(transition, prompt=same.replace("of the same scene",
                                                  "of a transition from one scene to another"))
    assert not list(case_rules.template_against_concept(fixed))
    assert not list(case_rules.template_against_concept(_with(prompt=same)))


def test_entity_phrase_pasted_after_an_article() -> None:
    pasted = _with(states={**make_case().states, "t3": "the cook lifts the a glass jug"})
    findings = list(case_rules.template_against_concept(pasted))
    assert [f.field for f in findings] == [("states", "t3")]
    assert "'the a'" in findings[0].message


# ---------------------------------------------------------------- style clash


@pytest.mark.parametrize("style", ["flat vector illustration", "cartoon",
                                   "16-bit pixel-art platformer", "anime cel animation"])
def test_gloss_blur_and_transparency_under_flat_styles(style: str) -> None:
    case = _with(setup=Setup("a counter", style, "side view"),
                 predicates=(*make_case().predicates[:3],
                             Predicate("p4", "t4", "the cheese is one glossy layer")),
                 states={**make_case().states, "t2": "the rotor is a blurred disc"})
    findings = list(case_rules.style_clash(case))
    assert {f.field for f in findings} == {("states", "t2"), ("predicates", 3, "text")}
    assert "cannot show gloss, shine, blur or transparency" in _messages(findings)


def test_gloss_under_photorealism_and_light_that_shines_pass() -> None:
    glossy = _with(predicates=(Predicate("p1", "t4", "the cheese is one glossy layer"),))
    assert not list(case_rules.style_clash(glossy))
    lamp = _with(setup=Setup("a room", "flat vector illustration", "side view"),
                 states={**make_case().states, "t4": "the bulb shines yellow"})
    assert not list(case_rules.style_clash(lamp))


# ---------------------------------------------------------------- small text and digits


@pytest.mark.parametrize(("text", "reads"), [
    ("the display reads 30", True),
    ("number 12 holds the ball", True),
    ("the sign says 'OPEN'", True),
    ("the level is at the 50 ml mark", True),
    ("the glass is full in panel 4", False),
    ("panels 1, 2 and 3 show the door closed", False),
    ("the rabbit's paws and the hedgehog's paws are empty", False),
    ("the lid is raised to about 45 degrees", False),
])
def test_what_needs_reading(text: str, reads: bool) -> None:
    assert needs_reading(text) is reads


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_panel_references_never_need_reading(panels: list[int]) -> None:
    listed = " and ".join(str(p) for p in panels)
    assert not needs_reading(f"the cup stays on the table in panels {listed}")


def test_reading_predicate_needs_the_small_text_tag() -> None:
    reads = Predicate("p4", "t4", "the scale display reads 52 g")
    case = _with(predicates=(*make_case().predicates[:3], reads))
    findings = list(case_rules.small_text(case))
    assert [f.field for f in findings] == [("predicates", 3, "text")]
    assert "tags: [small-text]" in findings[0].message
    tagged = _with(case, predicates=(*make_case().predicates[:3],
                                     dataclasses.replace(reads, tags=("small-text",))))
    assert not list(case_rules.small_text(tagged))


def test_stages_that_differ_only_in_a_number() -> None:
    states = {"t1": "the red lamp is lit and the display reads 30",
              "t2": "the red lamp is lit and the display reads 3",
              "t3": "the amber lamp is lit", "t4": "the green lamp is lit"}
    findings = list(case_rules.small_text(_with(states=states)))
    assert [f.field for f in findings] == [("states",)]
    assert "t1 and t2 differ only in a number" in findings[0].message


# ---------------------------------------------------------------- non_targets that change


@pytest.mark.parametrize(("non_target", "state"), [
    ("a pair of brown leather boots lying inside the box",
     "the man holds the lid; one brown boot is in his hand above the box"),
    ("a large white wall switch on the wall",
     "the man steps down and his right hand pushes the wall switch up"),
    ("a paper menu", "the guest has put the menu down"),
    ("the right rocker switch", "the right rocker switch is pressed down"),
])
def test_non_target_that_a_later_state_changes(non_target: str, state: str) -> None:
    entities = {**make_case().entities, "non_targets": (non_target,)}
    case = _with(entities=entities, states={**make_case().states, "t4": state})
    findings = list(case_rules.non_target_changes(case))
    assert [f.field for f in findings] == [("entities", "non_targets", 0)]
    assert "is a non_target (it must stay unchanged), but states.t4 changes it" in (
        findings[0].message)


@pytest.mark.parametrize(("non_target", "state"), [
    ("a green tea towel", "the towel stays folded beside the glass"),  # said to stay
    ("a wooden desk", "both hands rest on the desk"),  # a place, not what is acted on
    ("the red pen", "the hand lifts the blue pen out of the cup"),  # another pen
    ("the left rocker switch", "the right rocker switch is pressed down"),
    ("a cork coaster", "the table top holds only the coaster"),
])
def test_non_target_named_beside_the_action_passes(non_target: str, state: str) -> None:
    entities = {**make_case().entities, "non_targets": (non_target,),
                "targets": ("the blue pen and the right rocker switch",)}
    case = _with(entities=entities, states={**make_case().states, "t4": state})
    assert not list(case_rules.non_target_changes(case))


def test_a_non_target_changed_at_t1_only_is_the_setting() -> None:
    entities = {**make_case().entities, "non_targets": ("a paper menu",)}
    case = _with(entities=entities, states={**make_case().states, "t1": "she puts the menu "
                                            "down"})
    assert not list(case_rules.non_target_changes(case))


# ---------------------------------------------------------------- sibling flags


def test_sibling_that_checks_a_count_without_the_flag() -> None:
    counted = (*make_case().predicates, Predicate("p5", "all", "three boxes ride on the belt"))
    on = _with(make_case("machines-belt-1", quantity=True), predicates=counted)
    off = _with(make_case("machines-belt-2", quantity=False), variant=2,
                predicates=(*make_case().predicates,
                            Predicate("p5", "t3", "two items are past the sensor")))
    problems = list(sibling_flag_problems(on, off))
    assert [(p.case_id, p.field, p.severity) for p in problems] == [
        ("machines-belt-2", "applicable.quantity", "warning")]
    assert "'two items'" in problems[0].message and "machines-belt-1 sets it" in (
        problems[0].message)


def test_sibling_flags_may_differ_when_only_one_checks_it() -> None:
    on = _with(make_case("a-1", quantity=True),
               predicates=(Predicate("p1", "t1", "three cups stand in a row"),))
    off = _with(make_case("a-2", quantity=False), variant=2,
                predicates=(Predicate("p1", "t1", "panel 2 shows the cup in a hand"),))
    assert not list(sibling_flag_problems(on, off))


def test_occlusion_flag_of_siblings() -> None:
    hidden = (Predicate("p1", "t3", "the ball is hidden behind the wall"),)
    on = _with(make_case("b-1", occlusion=True), predicates=hidden)
    off = _with(make_case("b-2", occlusion=False), variant=2,
                predicates=(Predicate("p1", "t3", "the cat disappears into the box"),))
    assert [p.field for p in sibling_flag_problems(on, off)] == ["applicable.occlusion"]


# ---------------------------------------------------------------- across domains


def _scene_case(case_id: str, domain: str, scene: str) -> Case:
    prompt = (f"One square image divided into a 2x2 grid of four equal panels, showing four "
              f"moments of the same scene: {scene}. Panel 1 (top left): {scene}. Panel 2 "
              f"(top right): {scene}. Panel 3 (bottom left): {scene}. Panel 4 (bottom right): "
              f"{scene}. Keep the camera identical in every panel. Photorealistic.")
    return _with(id=case_id, domain=domain, prompt=prompt)


def test_near_duplicate_across_domains_once_the_template_is_removed() -> None:
    scene = "a grey cat crawls into a brown cardboard box on a wooden floor beside a sofa"
    a = _scene_case("pets-cat-box-1", "Pets", scene)
    b = _scene_case("occlusion-cat-box-1", "Occlusion", scene + " and a lamp")
    other = _scene_case("kitchen-pour-1", "Kitchen", "a cook pours milk into a tall glass")
    problems = list(cross_domain_problems([a, b, other]))
    assert [(p.case_id, p.severity) for p in problems] == [("occlusion-cat-box-1", "warning")]
    assert "near-duplicate of pets-cat-box-1 (Pets)" in problems[0].message
    same_domain = _with(b, domain="Pets")
    assert not list(cross_domain_problems([a, same_domain]))


def test_the_template_alone_makes_no_duplicate() -> None:
    a = _scene_case("x-1", "Pets", "a dog")
    b = _scene_case("y-1", "Sports", "a ball")
    assert scene_words(a) == {"dog"} and scene_words(b) == {"ball"}
    assert not list(cross_domain_problems([a, b], threshold=CROSS_DOMAIN_SIMILARITY))


# ---------------------------------------------------------------- through the command


def test_lint_names_file_case_and_field_of_each_review_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = case_dict(prompt=PROMPT + " Keep everything else identical.")
    data["setup"] = {**data["setup"], "style": "flat vector illustration"}
    data["predicates"] = [*data["predicates"][:3],
                          {"stage": "t4", "text": "the glass is glossy and the scale reads 300 g"}]
    path = write_case_file(tmp_path / "review.yaml", [data])
    assert main(["lint", "--custom", str(path)]) == 0
    out = capsys.readouterr().out
    where = f"{path}:"
    assert "case 'kitchen-pour-water-1': field 'prompt': warning: 'Keep everything else" in out
    assert "field 'predicates[3].text': warning: 'glossy' under the style" in out
    assert "field 'predicates[3].text': warning: 'the glass is glossy" in out
    assert out.count(where) == 3
    assert main(["lint", "--custom", "--strict", str(path)]) == 1


def test_small_text_tag_loads_and_only_tagged_specs_change(tmp_path: Path) -> None:
    data = case_dict()
    plain = load_case_file(write_case_file(tmp_path / "plain.yaml", [data]))[0]
    data["predicates"][3] = {**data["predicates"][3], "tags": ["small-text"]}
    tagged = load_case_file(write_case_file(tmp_path / "tagged.yaml", [data]))[0]
    assert tagged.predicates[3].tags == ("small-text",) and plain.predicates[3].tags == ()
    assert "tags" not in plain.spec()["predicates"][3]
    assert tagged.spec()["predicates"][3]["tags"] == ["small-text"]
    assert tagged.spec_hash != plain.spec_hash


def test_unknown_predicate_tag_is_a_schema_error(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    data = case_dict()
    data["predicates"][0] = {**data["predicates"][0], "tags": ["tiny-print"]}
    path = write_case_file(tmp_path / "bad.yaml", [data])
    assert main(["lint", "--custom", str(path)]) == 1
    out = capsys.readouterr().out
    assert "field 'predicates[0].tags[0]'" in out and '"small-text"' in out


def test_the_judge_and_the_report_show_the_small_text_tag() -> None:
    from pytest_imagetime.judges.prompt import case_text
    from pytest_imagetime.report.html import _checks

    reads = Predicate("p4", "t4", "the scale display reads 52 g", ("small-text",))
    case = _with(predicates=(*make_case().predicates[:3], reads))
    text = case_text(case, "prompt-only")
    assert '"tags": [\n    "small-text"\n   ]' in text and text.count('"tags"') == 1
    judgment = {"evaluates_predicates": True,
                "predicates": [{"id": "p4", "value": True, "evidence": "52 g shown"},
                               {"id": "p1", "value": True, "evidence": "empty"}]}
    page = _checks(judgment, case)
    assert "the scale display reads 52 g [small-text]" in page
    assert "the glass is empty<" in page
