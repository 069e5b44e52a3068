"""The judge as the benchmark's protocol describes it: the full rubric, the answer in the
protocol's order, per-case schemas, the layout answer, declared nulls and cap scopes."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.cases.loading import (
    builtin_cases_dir,
    case_files,
    inspect_case_file,
    load_case_file,
)
from pytest_imagetime.cases.model import Case
from pytest_imagetime.judges.prompt import (
    PROCESS_CONDITIONS,
    PROCESS_LISTS,
    PROMPT_VERSION,
    response_format,
    response_schema,
    schema_for_key,
    system_prompt,
)
from pytest_imagetime.report.json_report import ITEM_FIELDS, record_from_json, validate_report
from pytest_imagetime.report.scores_csv import COLUMNS
from pytest_imagetime.rubric.caps import apply_caps, case_scopes, layout_labels
from pytest_imagetime.rubric.facts import (
    ALL_DIMS,
    C_DIMS,
    CAP_RULES,
    D_DIMS,
    GATE_C0_MIN,
    RUBRIC_VERSION,
    Applicability,
    nullable_dims,
)
from pytest_imagetime.rubric.judgment import JudgeError, Judgment, validate_judgment
from pytest_imagetime.scoring.item import score_item
from tests.builders import case_dict, make_case, write_case_file
from tests.fake_openai import ServerState, answer_for, chat_server
from tests.strict_schema import strict_problems

# Every item the paper's tables 2 and 3 list for a dimension (RUBRIC.md), as words the
# judge's rubric line for that dimension must hold.
PAPER_ITEMS: dict[str, tuple[str, ...]] = {
    "C0": ("four", "readable", "self-contained", "2x2", "temporal order"),
    "C1": ("scaffold", "t1", "subsequent panels", "subject", "scene", "style", "view", "layout",
           "state"),
    "C2": ("subjects", "objects", "quantities", "roles", "orientation", "materials",
           "reflections", "target / non-target identities"),
    "C3": ("scene", "relative positions", "support", "scale", "camera", "depth", "lighting",
           "shadows", "reflections", "anchors"),
    "C4": ("actors or objects", "task-effective displacement", "pose", "direction", "support",
           "path progression"),
    "C5": ("t1 -> t2 -> t3 -> t4", "skipped", "premature"),
    "C6": ("preconditions", "contact", "force", "tool use", "body mechanics", "conservation"),
    "C7": ("agents", "tools", "targets", "recipients", "garments", "gaze", "attention",
           "affordances"),
    "C8": ("negations", "selective operations", "blocked actions", "counterfactual"),
    "C9": ("clear", "coherent", "artifact-free", "style-matched", "informative"),
    "D0": ("complete", "separated", "ordered", "readable", "stitched", "merged", "polluted",
           "cropped"),
    "D1": ("actor", "target", "recipient", "tool", "container", "obstacle", "non-target object",
           "final object"),
    "D2": ("persist", "transform", "transfer", "hide", "appear", "disappear", "task-valid"),
    "D3": ("anchors", "surface textures", "shadows", "reflections", "windows", "roads", "signs",
           "background objects"),
    "D4": ("left/right", "front/back", "inside/outside", "support", "contact", "containment",
           "distance", "anchor-relative positions"),
    "D5": ("viewpoint", "crop", "scale", "perspective", "lighting", "shadows", "reflections",
           "depth", "unless justified"),
    "D6": ("pose", "position", "facing direction", "stride phase", "support", "displacement"),
    "D7": ("hand-object", "tool-target", "foot-ground", "grip", "pouring", "insertion", "hinge",
           "sleeve", "collar", "handle", "support geometry"),
    "D8": ("state changes", "source/target variables", "decomposed", "start and end"),
    "D9": ("meaningfully different", "repeats", "early final states", "unrelated snapshots"),
    "D10": ("gaze", "head orientation", "pointing", "reaching", "body facing", "attention",
            "active target"),
    "D11": ("counts", "fill levels", "source/target volumes", "selected objects", "groups",
            "color-object bindings", "when applicable"),
    "D12": ("hidden", "inside", "behind", "reappearing", "when occlusion is task-relevant"),
    "D13": ("prohibitions", "blocked actions", "no-action outcomes", "selective operations",
            "counterfactual conditions"),
    "D14": ("small objects", "hands", "feet", "contact points", "faces", "tools", "openings",
            "reflections", "panel boundaries"),
}


def _packaged() -> list[Case]:
    return [c for f in case_files([builtin_cases_dir()]) for c in load_case_file(f)]


# ---------------------------------------------------------------- 1 the full rubric


@pytest.mark.parametrize("dim", ALL_DIMS)
def test_every_item_of_the_papers_rubric_reaches_the_judge(dim: str) -> None:
    line = next(line for line in system_prompt().splitlines() if line.startswith(f"- {dim} "))
    missing = [item for item in PAPER_ITEMS[dim] if item not in line]
    assert not missing, f"{dim}: {missing} not in {line!r}"


def test_the_system_prompt_is_the_same_for_every_case() -> None:
    # Nothing case-specific in it: one cached prefix for every request.
    assert "kitchen" not in system_prompt().lower()
    assert system_prompt() is system_prompt()
    for rule in CAP_RULES:
        assert rule.condition in system_prompt()


# ---------------------------------------------------------------- 2 the protocol's order


def test_the_answer_follows_the_protocols_order(case: Case) -> None:
    schema = response_schema(case, "prompt-only")
    assert list(schema["properties"]) == [
        "process", "layout", "panels", "predicates", "forbidden", "capability", "diagnostic",
        "failure_labels", "rationale"]
    assert list(schema["properties"]["capability"]["properties"]) == list(C_DIMS)
    assert list(schema["properties"]["capability"]["properties"]["C0"]["properties"]) == [
        "score", "confidence"]
    assert list(schema["properties"]["diagnostic"]["properties"]) == list(D_DIMS)
    # Evidence is written before the verdict it supports.
    verdict = schema["properties"]["predicates"]["items"]["properties"]
    assert list(verdict) == ["id", "evidence", "verdict"]


def test_the_process_parse_covers_what_the_paper_lists(case: Case) -> None:
    process = response_schema(case, "prompt-only")["properties"]["process"]["properties"]
    paper = ("stages", "actors", "target_objects", "tools", "non_target_objects", "anchors",
             "temporal_order", "causal_preconditions", "quantity_constraints",
             "occlusion_constraints", "negations", "blocked_actions", "gaze_tracking",
             "multi_agent_interaction", "counterfactual_requirements")
    assert list(process) == list(paper)
    assert set(PROCESS_LISTS) | set(PROCESS_CONDITIONS) <= set(paper)
    assert list(process["stages"]["properties"]) == ["t1", "t2", "t3", "t4"]


# ---------------------------------------------------------------- 3 the layout answer counts


def _judgment(case: Case, setting: str = "prompt-only", **overrides: Any) -> Judgment:
    nulls = nullable_dims(setting, case.applicable)  # type: ignore[arg-type]
    scores = {d: None if d in nulls else 9 for d in ALL_DIMS}
    values: dict[str, Any] = {
        "judge": "vlm", "judge_model": "m", "rubric_version": "r", "prompt_version": "p",
        "scores": scores, "confidence": {d: None if scores[d] is None else 0.9 for d in C_DIMS},
        "layout": {"panel_count": 4, "is_2x2_grid": True, "order_as_expected": True,
                   "all_panels_readable": True}}
    values.update(overrides)
    return Judgment(**values)


@pytest.mark.parametrize("wrong", [{"panel_count": 3}, {"is_2x2_grid": False},
                                   {"order_as_expected": False},
                                   {"all_panels_readable": False}])
def test_a_sheet_the_judge_reads_as_no_2x2_sheet_fails_the_gate_whatever_c0(
        case: Case, wrong: dict[str, Any]) -> None:
    layout = {"panel_count": 4, "is_2x2_grid": True, "order_as_expected": True,
              "all_panels_readable": True, **wrong}
    judgment = _judgment(case, layout=layout)
    labels = layout_labels(judgment.layout, "prompt-only")
    assert labels == ("not_2x2_sheet",)
    capped, caps = apply_caps(judgment.scores, labels, case_scopes(case, "prompt-only"))
    assert capped["C0"] == 0 and not score_item(capped).gate_pass
    assert capped["C5"] is not None and capped["C5"] <= 2  # what the cap says follows
    assert [c.rule for c in caps] == ["unusable-sheet"]


def test_a_four_panel_ordered_sheet_keeps_its_c0(case: Case) -> None:
    judgment = _judgment(case)
    assert layout_labels(judgment.layout, "prompt-only") == ()
    assert layout_labels(None, "prompt-only") == ()  # judges that do not read the layout


def test_scaffold_gate_checks_the_top_left_panel_against_the_reference(case: Case) -> None:
    layout = {"panel_count": 4, "is_2x2_grid": True, "order_as_expected": True,
              "all_panels_readable": True, "top_left_matches_reference": False}
    judgment = _judgment(case, "scaffold", layout=layout)
    labels = layout_labels(judgment.layout, "scaffold")
    assert labels == ("reference_not_kept",)
    capped, caps = apply_caps(judgment.scores, labels, case_scopes(case, "scaffold"))
    assert capped["C0"] == GATE_C0_MIN - 1 and not score_item(capped).gate_pass
    assert capped["C1"] == 3
    # Prompt-only sheets have no reference: the question is not asked there.
    assert "top_left_matches_reference" not in response_schema(
        case, "prompt-only")["properties"]["layout"]["properties"]
    assert "top_left_matches_reference" in response_schema(
        case, "scaffold")["properties"]["layout"]["required"]
    assert layout_labels(layout, "prompt-only") == ()
    _, caps = apply_caps(judgment.scores, ["reference_not_kept"],
                         case_scopes(case, "prompt-only"))
    assert caps == ()


# ---------------------------------------------------------------- 4 per-case schemas


def test_ids_are_enums_of_the_cases_own_ids(case: Case) -> None:
    schema = response_schema(case, "prompt-only")
    predicates = schema["properties"]["predicates"]
    assert predicates["items"]["properties"]["id"]["enum"] == [p.id for p in case.predicates]
    assert predicates["minItems"] == predicates["maxItems"] == len(case.predicates)
    forbidden = schema["properties"]["forbidden"]
    assert forbidden["items"]["properties"]["id"]["enum"] == [f.id for f in case.forbidden]
    validator = jsonschema.Draft202012Validator(schema)
    answer = _valid_answer(case, "prompt-only")
    assert not list(validator.iter_errors(answer))
    answer["predicates"][0]["id"] = "p99"
    assert any(e.validator == "enum" for e in validator.iter_errors(answer))


def test_a_number_carries_a_confidence_and_a_null_is_null(case: Case) -> None:
    schema = response_schema(case, "prompt-only")
    capability = schema["properties"]["capability"]["properties"]
    assert capability["C0"]["properties"] == {
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1}}
    assert capability["C1"]["properties"] == {"score": {"type": "null"},
                                              "confidence": {"type": "null"}}
    assert schema["properties"]["diagnostic"]["properties"]["D12"] == {"type": "null"}
    validator = jsonschema.Draft202012Validator(schema)
    missing = _valid_answer(case, "prompt-only")
    missing["capability"]["C3"]["confidence"] = None
    assert list(validator.iter_errors(missing))
    number_for_null = _valid_answer(case, "prompt-only")
    number_for_null["diagnostic"]["D12"] = 7
    assert list(validator.iter_errors(number_for_null))


def test_validation_wants_a_confidence_with_every_c_score(case: Case) -> None:
    judgment = _judgment(case)
    validate_judgment(judgment, case, "prompt-only")
    missing = dataclasses.replace(judgment, confidence={**judgment.confidence, "C3": None})
    with pytest.raises(JudgeError, match="C3 has a score but no confidence"):
        validate_judgment(missing, case, "prompt-only")
    stray = dataclasses.replace(judgment, confidence={**judgment.confidence, "C1": 0.5})
    with pytest.raises(JudgeError, match="C1 has a confidence but no score"):
        validate_judgment(stray, case, "prompt-only")


@pytest.mark.parametrize("setting", ["prompt-only", "scaffold"])
def test_every_packaged_cases_schema_is_accepted_by_strict_structured_outputs(
        setting: str) -> None:
    for case in _packaged():
        fmt = response_format("json_schema", case, setting)  # type: ignore[arg-type]
        assert fmt["json_schema"]["strict"] is True
        problems = strict_problems(fmt["json_schema"]["schema"])
        assert not problems, f"{case.id} ({setting}): {problems}"


def test_the_strict_checker_refuses_what_openai_refuses() -> None:
    assert strict_problems({"type": "object", "properties": {"a": {"type": "string"}},
                            "required": [], "additionalProperties": False})
    assert strict_problems({"type": "object", "properties": {}, "required": []})
    assert strict_problems({"type": "object", "properties": {"a": {"type": "string",
                                                                   "minLength": 1}},
                            "required": ["a"], "additionalProperties": False})
    assert strict_problems({"anyOf": [{"type": "object"}]})


def _valid_answer(case: Case, setting: str) -> dict[str, Any]:
    nulls = nullable_dims(setting, case.applicable)  # type: ignore[arg-type]
    layout: dict[str, Any] = {"panel_count": 4, "is_2x2_grid": True, "order_as_expected": True,
                              "all_panels_readable": True}
    if setting == "scaffold":
        layout["top_left_matches_reference"] = True
    return {
        "process": {"stages": dict.fromkeys(("t1", "t2", "t3", "t4"), "x"),
                    **{k: [] for k in PROCESS_LISTS}, "temporal_order": "x",
                    **{k: [] for k in PROCESS_CONDITIONS}},
        "layout": layout,
        "panels": [{"panel": i, "stage": f"t{i}", "observed": "x", "readable": True}
                   for i in range(1, 5)],
        "predicates": [{"id": p.id, "evidence": "e", "verdict": "holds"}
                       for p in case.predicates],
        "forbidden": [{"id": f.id, "evidence": "e", "verdict": "absent"} for f in case.forbidden],
        "capability": {d: {"score": None, "confidence": None} if d in nulls
                       else {"score": 8, "confidence": 0.8} for d in C_DIMS},
        "diagnostic": {d: None if d in nulls else 8 for d in D_DIMS},
        "failure_labels": [], "rationale": "r",
    }


# ---------------------------------------------------------------- 5 declared nulls


def test_every_packaged_case_without_actors_declares_d10() -> None:
    cases = _packaged()
    actorless = [c for c in cases if not c.entities.get("actors")]
    assert len(actorless) == 73
    assert all(c.applicable.declared == ("D10",) for c in actorless)
    assert all(c.applicable.declared == () for c in cases if c.entities.get("actors"))
    assert all("D10" in nullable_dims("prompt-only", c.applicable) for c in actorless)


def test_a_declared_null_must_be_null_and_reaches_the_judge(tmp_path: Path) -> None:
    data = case_dict(not_applicable=["D10"],
                     entities={"targets": ["an empty clear glass"],
                               "non_targets": ["a green tea towel"]})
    (case,) = load_case_file(write_case_file(tmp_path / "k.yaml", [data]))
    assert case.applicable.declared == ("D10",)
    schema = response_schema(case, "prompt-only")
    assert schema["properties"]["diagnostic"]["properties"]["D10"] == {"type": "null"}
    scored = _judgment(case)
    assert scored.scores["D10"] is None
    numbered = dataclasses.replace(scored, scores={**scored.scores, "D10": 7})
    with pytest.raises(JudgeError, match="D10 must be null"):
        validate_judgment(numbered, case, "prompt-only")


@pytest.mark.parametrize(("declared", "entities", "message"), [
    (["D10"], None, "D10 is declared not applicable, but the case has actors"),
    (["C8"], None, "C8 is not declared here: set applicable.constraint to false"),
    (["C1"], None, "C1 follows the setting"),
    (["D4"], None, "D4 applies to every case and cannot be declared"),
])
def test_lint_checks_the_declaration_against_the_entities(
        tmp_path: Path, declared: list[str], entities: dict[str, Any] | None,
        message: str) -> None:
    data = case_dict(not_applicable=declared)
    _, problems = inspect_case_file(write_case_file(tmp_path / "k.yaml", [data]))
    errors = [str(p) for p in problems if p.severity == "error"]
    assert any(message in e and "field 'not_applicable'" in e for e in errors), errors


def test_a_case_without_actors_that_declares_nothing_is_warned(tmp_path: Path) -> None:
    data = case_dict(entities={"targets": ["an empty clear glass"],
                               "non_targets": ["a green tea towel"]})
    _, problems = inspect_case_file(write_case_file(tmp_path / "k.yaml", [data]))
    warnings = [str(p) for p in problems if p.severity == "warning"]
    assert any("no actors, so D10" in w and "not_applicable: [D10]" in w for w in warnings)


def test_an_unknown_dimension_is_refused_by_the_schema(tmp_path: Path) -> None:
    data = case_dict(not_applicable=["D99"])
    _, problems = inspect_case_file(write_case_file(tmp_path / "k.yaml", [data]))
    assert any("'D99' is not accepted" in str(p) for p in problems)


# ---------------------------------------------------------------- 6 cap scopes


def _scoped(**changes: Any) -> Case:
    return dataclasses.replace(make_case(), **changes)


def test_non_conservation_caps_assembly_tasks_too() -> None:
    scores = dict.fromkeys(ALL_DIMS, 10)
    assembly = _scoped(levels=("L0", "L1", "L2", "L3", "L4", "L5"),
                       applicable=Applicability(False, False, False),
                       entities={"actors": ("a carpenter",), "targets": ("a chair back",),
                                 "non_targets": ("a bench",)})
    _, caps = apply_caps(scores, ["non_conservation"], case_scopes(assembly, "prompt-only"))
    assert [c.rule for c in caps] == ["non-conservation"]
    handover = _scoped(levels=("L0", "L1", "L2", "L4"),
                       applicable=Applicability(False, False, False),
                       entities={"actors": ("a girl",), "recipients": ("her friend",),
                                 "targets": ("a book",), "non_targets": ("a desk",)})
    assert "source_target" in case_scopes(handover, "prompt-only")
    waving = _scoped(levels=("L0", "L1", "L4"), applicable=Applicability(False, False, False),
                     entities={"actors": ("a man",), "non_targets": ("a porch",)})
    _, caps = apply_caps(scores, ["non_conservation"], case_scopes(waving, "prompt-only"))
    assert caps == ()


def test_no_displacement_caps_only_motion_tasks() -> None:
    scores = dict.fromkeys(ALL_DIMS, 10)
    switch = _scoped(levels=("L0", "L1", "L3", "L4", "L5"))
    _, caps = apply_caps(scores, ["no_displacement"], case_scopes(switch, "prompt-only"))
    assert caps == ()
    rolling = _scoped(levels=("L0", "L1", "L2", "L5"))
    capped, caps = apply_caps(scores, ["no_displacement"], case_scopes(rolling, "prompt-only"))
    assert [c.rule for c in caps] == ["no-displacement"] and capped["C4"] == 2
    # Copied phases are capped everywhere.
    _, caps = apply_caps(scores, ["copied_phases"], case_scopes(switch, "prompt-only"))
    assert [c.rule for c in caps] == ["copied-phases"]


def test_packaged_assembly_cases_fall_under_the_conservation_cap() -> None:
    assembly = [c for c in _packaged() if "assemble" in c.concept]
    assert assembly
    assert all("source_target" in case_scopes(c, "prompt-only") for c in assembly)


def test_a_cap_that_changed_nothing_says_so_plainly() -> None:
    scores = dict.fromkeys(ALL_DIMS, 1)
    _, (cap,) = apply_caps(scores, ["identity_drift"], frozenset({"always"}))
    text = cap.describe()
    assert "lowered nothing" not in text
    assert "no score changed: every capped score was already at or below its limit" in text
    _, (cap,) = apply_caps(dict.fromkeys(ALL_DIMS, 9), ["identity_drift"],
                           frozenset({"always"}))
    assert "lowered C2 9->4, D1 9->5, D2 9->4" in cap.describe()


def test_stored_judgments_keep_their_layout_answer(case: Case) -> None:
    judgment = _judgment(case)
    again = Judgment.from_json(json.loads(json.dumps(judgment.to_json())))
    assert again.layout == judgment.layout
    old = judgment.to_json()
    del old["layout"]  # a judgment stored before the layout answer was kept
    assert Judgment.from_json(old).layout is None


# ---------------------------------------------------------------- end to end


def test_a_judge_that_counts_three_panels_fails_the_layout_gate_in_a_run(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    def three_panels(request: dict[str, Any]) -> str:
        answer = answer_for(request, 9)
        answer["layout"]["panel_count"] = 3
        return json.dumps(answer)

    with chat_server(ServerState(responder=three_panels)) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        write_case_file(pytester.path / "k.yaml", [case_dict()])
        result = pytester.runpytest("k.yaml", "--imagetime-model=procedural",
                                    "--imagetime-size=128")
        request = server.state.requests[0]
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*layout gate: C0 = 0 (needs >= 5)*",
                                 "*cap unusable-sheet*not_2x2_sheet*lowered C0 9->0*",
                                 "*scores: C mean * | protocol node * | L0 *",
                                 "model*Overall*layout-ok%*proto*L0*L6*judge",
                                 "procedural * 0.0 *"])
    assert "| gate " not in result.stdout.str()
    schema = request["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["predicates"]["items"]["properties"]["id"]["enum"] == [
        "p1", "p2", "p3", "p4", "p5"]
    report = json.loads(next((pytester.path / "reports").rglob("report.json")).read_text())
    (item,) = report["items"]
    assert item["scores"]["C0"] == 0 and item["gate_pass"] is False
    assert "not_2x2_sheet" in item["labels"]


# ---------------------------------------------------------------- 7 what the paper reports


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_run_keeps_confidences_the_analysis_table_and_the_prompt_text(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]) -> None:
    nature = case_dict("nature-leaf-falls-1", not_applicable=["D10"], domain="Nature",
                       entities={"targets": ["an empty clear glass"],
                                 "non_targets": ["a green tea towel"]})
    with chat_server(ServerState()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        write_case_file(pytester.path / "k.yaml", [case_dict(), nature])
        result = pytester.runpytest("k.yaml", "--imagetime-model=procedural",
                                    "--imagetime-size=128", *workers)
    result.assert_outcomes(passed=2)
    run = pytester.path / "reports" / "procedural" / "vlm"
    report = json.loads((run / "report.json").read_text())
    validate_report(report)
    confidence = report["aggregate"]["judge_confidence"]
    assert confidence["C0"] == pytest.approx(0.8) and confidence["C1"] is None
    for domain in ("Kitchen", "Nature"):
        assert report["aggregate"]["by_domain"][domain]["judge_confidence"]["C2"] == \
            pytest.approx(0.8)
    items = {i["case_id"]: i for i in report["items"]}
    assert items["kitchen-pour-water-1"]["confidence"]["C0"] == pytest.approx(0.8)
    assert items["nature-leaf-falls-1"]["scores"]["D10"] is None

    with (run / "scores.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["case_id"] for r in rows] == sorted(items)
    nature_row = next(r for r in rows if r["case_id"] == "nature-leaf-falls-1")
    assert nature_row["D10"] == "" and nature_row["C1"] == "" and nature_row["C1_confidence"] == ""
    assert nature_row["C0_confidence"] == "0.8" and nature_row["model"] == "procedural"
    assert nature_row["setting"] == "prompt-only"
    assert float(nature_row["overall"]) == pytest.approx(items["nature-leaf-falls-1"]["overall"])
    assert list(rows[0]) == list(COLUMNS)

    kept = (run / "judge_prompt.txt").read_text()
    assert system_prompt() in kept and PROMPT_VERSION in kept
    assert report["manifest"]["judge"]["config"]["prompt_template_sha256"] == \
        hashlib.sha256(kept.encode()).hexdigest()


def test_old_reports_without_confidences_still_read() -> None:
    item: dict[str, Any] = {name: None for name in ITEM_FIELDS if name != "confidence"}
    item.update(key="k", case_id="c", labels=[], caps=[], probed_levels=[],
                predicates_failed=[], forbidden_observed=[], scores={}, tree={})
    assert record_from_json(item).confidence == {}


@pytest.mark.parametrize(("module", "name", "old"), [
    ("pytest_imagetime.judges.vlm", "PROMPT_VERSION", "imagetime-judge-prompt/1"),
    ("pytest_imagetime.engine.runner", "RUBRIC_VERSION", "imagetime-rubric/1"),
])
def test_judgments_of_an_older_prompt_or_rubric_are_judged_again(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, module: str, name: str,
        old: str) -> None:
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    args = ["k.yaml", "--imagetime-model=procedural", "--imagetime-size=128"]
    with chat_server(ServerState()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        with monkeypatch.context() as older:
            older.setattr(f"{module}.{name}", old)
            pytester.runpytest(*args).assert_outcomes(passed=1)
        assert len(server.state.requests) == 1
        pytester.runpytest(*args).assert_outcomes(passed=1)
        assert len(server.state.requests) == 2  # not reused: judged again
        pytester.runpytest(*args).assert_outcomes(passed=1)
        assert len(server.state.requests) == 2  # the new judgment is reused
    stored = json.loads(next((pytester.path / "reports").rglob("judgments/*.json")).read_text())
    assert stored["judgment"]["prompt_version"] == PROMPT_VERSION
    assert stored["rubric_version"] == RUBRIC_VERSION


# ---------------------------------------------------------------- invariants


layouts = st.fixed_dictionaries({
    "panel_count": st.integers(0, 9), "is_2x2_grid": st.booleans(),
    "order_as_expected": st.booleans(), "all_panels_readable": st.booleans(),
    "top_left_matches_reference": st.booleans()})


@given(layouts, st.sampled_from(["prompt-only", "scaffold"]), st.integers(0, 10))
def test_no_sheet_passes_the_layout_gate_against_the_judges_own_layout_answer(
        layout: dict[str, Any], setting: str, c0: int) -> None:
    scores = dict.fromkeys(ALL_DIMS, c0)
    labels = layout_labels(layout, setting)  # type: ignore[arg-type]
    scopes = case_scopes(make_case(), setting)  # type: ignore[arg-type]
    capped, _ = apply_caps(scores, labels, scopes)
    readable_grid = (layout["panel_count"] == 4 and layout["is_2x2_grid"]
                     and layout["order_as_expected"] and layout["all_panels_readable"])
    reference_kept = setting == "prompt-only" or layout["top_left_matches_reference"]
    if score_item(capped).gate_pass:
        assert readable_grid and reference_kept
    if readable_grid and reference_kept:
        assert capped["C0"] == c0  # the layout answer alone lowers nothing


@given(st.lists(st.sampled_from([f"p{i}" for i in range(1, 40)]), min_size=4, max_size=12,
                unique=True),
       st.lists(st.sampled_from([f"f{i}" for i in range(1, 20)]), min_size=1, max_size=8,
                unique=True),
       st.frozensets(st.sampled_from(list(ALL_DIMS))), st.booleans())
def test_every_per_case_schema_is_strict_mode_valid(predicates: list[str], forbidden: list[str],
                                                    nulls: frozenset[str],
                                                    scaffold: bool) -> None:
    schema = schema_for_key(tuple(predicates), tuple(forbidden), nulls, scaffold)
    assert strict_problems(schema) == []
    capability = schema["properties"]["capability"]["properties"]
    for dim in C_DIMS:
        pair = capability[dim]["properties"]
        assert (pair["score"]["type"] == "null") == (pair["confidence"]["type"] == "null") \
            == (dim in nulls)


def test_the_baseline_comparison_names_the_protocol_node_apart_from_its_verdict() -> None:
    from pytest_imagetime.gate.compare import GateResult, Row, gate_lines, parse_thresholds

    assert parse_thresholds("protocol:0.5,gate:0.4", "--imagetime-max-drop") == {"gate": 0.4}
    result = GateResult(run="r", rows=(Row("gate", 8.0, 7.0, None, None),))
    lines = gate_lines([result])
    assert lines[0] == "gate passed: r"
    assert any(line.startswith("  protocol ") for line in lines)
    assert not any(line.startswith("  gate ") for line in lines)


def test_a_hosted_backends_generation_cost_reaches_the_report_and_the_cost_figure(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_imagetime.cli import main

    write_case_file(pytester.path / "k.yaml", [case_dict(), case_dict("kitchen-pour-water-2",
                                                                      variant=2)])
    with chat_server(ServerState()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result = pytester.runpytest("k.yaml", "--imagetime-model=openai-images:gpt-image-1",
                                    "--imagetime-judge=pixel", "--imagetime-size=256")
    result.assert_outcomes(failed=2)  # the server's pictures are no motion sheets: scored low
    run = next((pytester.path / "reports").rglob("pixel/report.json"))
    report = json.loads(run.read_text())
    validate_report(report)
    costs = [item["generation_cost_usd"] for item in report["items"]]
    assert all(c is not None and c > 0 for c in costs)
    assert report["aggregate"]["generation_cost_usd"] == pytest.approx(sum(costs))
    assert report["aggregate"]["generation_cost_n"] == 2
    assert main(["report", str(run.parent), "-o", str(pytester.path / "site")]) == 0
    index = (pytester.path / "site" / "index.html").read_text()
    assert '<img src="figures/cost_vs_overall.svg"' in index
    assert "judge_cost_vs_overall" not in index  # the pixel judge costs nothing


def test_replay_refuses_judgments_of_an_older_rubric_and_says_so(tmp_path: Path,
                                                                 case: Case) -> None:
    from PIL import Image

    from pytest_imagetime.judges.base import SheetToJudge
    from pytest_imagetime.judges.replay import ReplayJudge

    (tmp_path / "judgments").mkdir()
    record = {"image_sha256": "0" * 64, "case_spec_sha256": "an older form of the case",
              "rubric_version": "imagetime-rubric/1",
              "judgment": _judgment(case).to_json()}
    (tmp_path / "judgments" / f"{case.id}.json").write_text(json.dumps(record))
    sheet = SheetToJudge(case, "prompt-only", Image.new("RGB", (8, 8)), tmp_path / "x.png",
                         "0" * 64)
    with pytest.raises(JudgeError, match="made under imagetime-rubric/1, this is "
                                         f"{RUBRIC_VERSION}: its answers are not mixed"):
        ReplayJudge(str(tmp_path)).judge(sheet=sheet)
