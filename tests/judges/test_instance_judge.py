"""Grounded evidence (UI2V-Bench's instance-level pipeline on motion sheets): the prompt parsed
by the local server, subjects grounded by tiny random OWLv2 / Grounding DINO models or by given
detections, the findings recorded and capping the VLM's scores."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.backends.registry import JUDGES
from pytest_imagetime.cases.model import Case
from pytest_imagetime.judges.base import JudgeOptions, SheetToJudge
from pytest_imagetime.judges.grounding import (
    GROUNDING_DINO_ID,
    OWLV2_ID,
    Detection,
    GroundingDinoDetector,
    OwlDetector,
    build_evidence,
    distinct_objects,
    load_detector,
)
from pytest_imagetime.judges.instance import InstanceJudge
from pytest_imagetime.models.base import GenerationRequest
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.rubric.caps import apply_caps, case_scopes
from pytest_imagetime.rubric.facts import EVIDENCE_CAP_RULES, EVIDENCE_LABELS
from pytest_imagetime.rubric.judgment import JudgeError, validate_judgment
from tests.builders import case_dict, make_case, write_case_file
from tests.fake_openai import ChatServer, ServerState, answer_for, chat_server
from tests.tiny_detectors import save_grounding_dino, save_owlv2

SIDES = dict.fromkeys(("t1", "t2", "t3", "t4"), 100)
STAGES = ("t1", "t2", "t3", "t4")


def motion_case() -> Case:
    """A motion task (L2) that moves nothing between a source and a target: counts fixed."""
    return dataclasses.replace(make_case(quantity=False), levels=("L0", "L1", "L2"))


def box_at(x: float, y: float = 50.0, half: float = 10.0) -> tuple[float, float, float,
                                                                     float]:
    return (x - half, y - half, x + half, y + half)


def walk(subject: str = "the cook", xs: Sequence[float] = (20, 40, 60, 80)
         ) -> list[Detection]:
    return [Detection(s, subject, 0.9, box_at(x)) for s, x in zip(STAGES, xs, strict=True)]


def _evidence(case: Case, detections: list[Detection], subjects: Sequence[str] = ("the cook",)
              ) -> Any:
    return build_evidence(case, "prompt-only", subjects, ("walks",), detections, SIDES,
                          "given")


# ---------------------------------------------------------------- evidence from given boxes


def test_a_subject_that_moves_in_every_panel_gives_no_finding() -> None:
    found = _evidence(motion_case(), walk())
    assert found.findings == () and found.labels == ()
    assert found.tracks[0].counts == (1, 1, 1, 1)
    assert found.tracks[0].shift == pytest.approx(0.6)


def test_overlapping_boxes_are_one_object() -> None:
    twice = [*walk(), Detection("t2", "the cook", 0.5, box_at(41))]
    assert len(distinct_objects([d for d in twice if d.panel == "t2"])) == 1
    assert _evidence(motion_case(), twice).labels == ()


def test_missing_and_duplicated_subjects_on_a_case_with_fixed_counts() -> None:
    detections = [d for d in walk() if d.panel != "t3"]
    detections.append(Detection("t4", "the cook", 0.8, box_at(20)))
    found = _evidence(motion_case(), detections)
    assert found.counts_fixed
    assert found.findings == ("the cook: missing in t3", "the cook: 1 in t1, more in t4")
    assert found.labels == ("grounded_subject_missing", "grounded_subject_duplicated")


def test_count_changes_are_only_recorded_where_the_case_moves_things() -> None:
    # pouring water: a source-target case, where things may appear and disappear
    detections = [d for d in walk("a glass") if d.panel != "t3"]
    found = _evidence(make_case(), detections, ("a glass",))
    assert not found.counts_fixed
    assert found.findings == ("a glass: missing in t3",) and found.labels == ()


def test_no_displacement_on_a_motion_task() -> None:
    still = walk(xs=(50, 51, 52, 51))
    found = _evidence(motion_case(), still)
    assert found.labels == ("grounded_no_displacement",)
    assert "largest shift 0.020" in found.findings[0]
    # one subject moving is enough; a case without L2 only records the finding
    assert _evidence(motion_case(), [*still, *walk("a dog")], ("the cook", "a dog")).labels == ()
    assert _evidence(make_case(), still).labels == ()


def test_a_subject_found_nowhere_is_recorded_not_labelled() -> None:
    found = _evidence(motion_case(), [])
    assert found.findings == ("the cook: found in no panel",) and found.labels == ()
    assert found.to_json()["tracks"][0]["centres"] == [None] * 4


def test_evidence_caps_lower_the_vlm_scores_they_contradict() -> None:
    scores: dict[str, int | None] = {"C2": 9, "D1": 8, "D2": 3, "C4": 9, "D6": 9, "D8": 9}
    motion = case_scopes(motion_case(), "prompt-only")
    capped, applied = apply_caps(scores, ["grounded_subject_missing",
                                          "grounded_no_displacement"], motion)
    assert [a.rule for a in applied] == ["grounded-subject-lost", "grounded-no-displacement"]
    assert capped == {"C2": 4, "D1": 5, "D2": 3, "C4": 2, "D6": 3, "D8": 4}
    # not a motion task: no displacement caps nothing
    _, applied = apply_caps(scores, ["grounded_no_displacement"],
                            case_scopes(make_case(), "prompt-only"))
    assert applied == ()
    assert {label for rule in EVIDENCE_CAP_RULES for label in rule.labels} == set(
        EVIDENCE_LABELS)


# ---------------------------------------------------------------- tiny detectors


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("detectors")
    return {"owlv2": save_owlv2(root / "owlv2"),
            "grounding-dino": save_grounding_dino(root / "grounding-dino")}


PANELS = [Image.new("RGB", (60, 60), (40 * i, 120, 30)) for i in range(4)]


@pytest.mark.parametrize("name", ["owlv2", "grounding-dino"])
def test_tiny_detectors_ground_each_subject_in_each_panel(tiny: dict[str, Path],
                                                          name: str) -> None:
    detector: OwlDetector | GroundingDinoDetector = (
        OwlDetector(str(tiny[name]), threshold=0.0) if name == "owlv2"
        else GroundingDinoDetector(str(tiny[name]), threshold=0.0, text_threshold=0.0))
    subjects = ("the red jug", "a glass")
    found = detector.detect(PANELS, subjects)
    assert {d.panel for d in found} == set(STAGES)
    assert {d.subject for d in found} == set(subjects)
    assert all(0.0 <= d.score <= 1.0 and d.box[0] <= d.box[2] for d in found)
    assert found == detector.detect(PANELS, subjects)  # the same boxes every time
    detector.threshold = 1.0  # nothing scores above 1: no detection, no finding
    assert detector.detect(PANELS, subjects) == []
    evidence = build_evidence(motion_case(), "prompt-only", subjects, (), found,
                              dict.fromkeys(STAGES, 60), detector.name)
    assert [t.subject for t in evidence.tracks] == list(subjects)


def test_detectors_load_by_name_and_model(tiny: dict[str, Path]) -> None:
    assert isinstance(load_detector(f"owlv2={tiny['owlv2']}"), OwlDetector)
    dino = load_detector(f"grounding-dino={tiny['grounding-dino']}")
    assert isinstance(dino, GroundingDinoDetector) and dino.model_id == str(
        tiny["grounding-dino"])
    assert (OwlDetector.__init__.__defaults__, GroundingDinoDetector.__init__.__defaults__
            ) == ((OWLV2_ID, 0.3), (GROUNDING_DINO_ID, 0.35, 0.25))
    with pytest.raises(ValueError, match="unknown detector 'yolo'"):
        load_detector("yolo")
    # a session that makes no calls loads no detector, and names the same one
    idle = InstanceJudge("grounding-dino", options=JudgeOptions(calls=False))
    assert (idle.config()["detector"], idle.config()["detector_model"]) == (
        "grounding-dino", GROUNDING_DINO_ID)
    with pytest.raises(ValueError, match=r"cannot load the detector /no/such/folder: no such "
                                         r"folder; .*NAME=FOLDER"):
        load_detector("owlv2=/no/such/folder")


# ---------------------------------------------------------------- the judge


class GivenDetector:
    """Detections chosen by the test: the cook missing from t3."""

    name = "given"
    model_id = "given"

    def detect(self, panels: Sequence[Image.Image], subjects: Sequence[str]
               ) -> list[Detection]:
        return [d for d in walk(subjects[0]) if d.panel != "t3"]


def parse_then_judge(subjects: list[str]) -> Callable[[dict[str, Any]], str]:
    def answer(request: dict[str, Any]) -> str:
        name = request["response_format"].get("json_schema", {}).get("name")
        if name == "imagetime_prompt_analysis":
            return json.dumps({"subject": subjects, "action": ["pours the water"]})
        return json.dumps(answer_for(request, 8))

    return answer


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState()) as running:
        yield running


def _options(server: ChatServer) -> JudgeOptions:
    return JudgeOptions(base_url=server.base_url, key_env=None, retries=1, reasks=1,
                        timeout_s=5.0, price_per_mtok=(2.0, 8.0))


def _sheet(case: Case) -> SheetToJudge:
    image = ProceduralModel().generate(request=GenerationRequest(case, "prompt-only", 128,
                                                                 1)).image
    return SheetToJudge(case, "prompt-only", image, Path("x.png"), "0" * 64)


def test_the_judge_records_evidence_and_labels_what_it_contradicts(server: ChatServer) -> None:
    server.state.responder = parse_then_judge(["the cook", " "])
    case = motion_case()
    judge = InstanceJudge(options=_options(server), detector=GivenDetector())
    judgment = judge.judge(sheet=_sheet(case))
    validate_judgment(judgment, case, "prompt-only", judge.scored_dims)
    assert judgment.judge == "vlm-instance" and judgment.scores["C2"] == 8
    assert "grounded_subject_missing" in judgment.labels
    grounding = judgment.raw["grounding"]
    assert grounding["subjects"] == ["the cook"] and grounding["actions"] == ["pours the water"]
    assert grounding["findings"] == ["the cook: missing in t3"]
    assert "grounded (given): the cook: missing in t3" in judgment.rationale
    parse = next(r for r in server.state.requests
                 if r["response_format"]["json_schema"]["name"] == "imagetime_prompt_analysis")
    assert parse["response_format"]["json_schema"]["strict"] is True
    assert judgment.cost_usd == pytest.approx(2 * (1500 * 2 + 500 * 8) / 1e6)
    capped, _ = apply_caps(judgment.scores, judgment.labels, case_scopes(case, "prompt-only"))
    assert capped["C2"] == 4 and capped["D1"] == 5


def test_an_empty_parse_is_asked_again_then_fails(server: ChatServer) -> None:
    server.state.responder = parse_then_judge([])
    judge = InstanceJudge(options=_options(server), detector=GivenDetector())
    with pytest.raises(JudgeError, match=r"prompt analysis: .*no subject parsed"):
        judge.judge(sheet=_sheet(motion_case()))


def test_a_run_with_a_tiny_detector_records_its_evidence(pytester: pytest.Pytester,
                                                         server: ChatServer,
                                                         tiny: dict[str, Path]) -> None:
    server.state.responder = parse_then_judge(["the cook", "a glass"])
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    result = pytester.runpytest(
        "k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
        f"--imagetime-judge=vlm-instance:owlv2={tiny['owlv2']}",
        f"--imagetime-judge-base-url={server.base_url}", "--imagetime-judge-key-env=none")
    outcomes = result.parseoutcomes()
    assert "error" not in outcomes and "errors" not in outcomes
    out = pytester.path / "reports" / "procedural" / "vlm-instance"
    record = json.loads((out / "judgments" / "kitchen-pour-water-1.json").read_text())
    assert record["judge_config"]["detector"] == "owlv2"
    assert record["judge_config"]["detector_model"] == str(tiny["owlv2"])
    grounding = record["judgment"]["raw"]["grounding"]
    assert grounding["detector"] == "owlv2" and len(grounding["tracks"]) == 2
    report = json.loads((out / "report.json").read_text())
    assert report["aggregate"]["errors"] == 0
    assert isinstance(JUDGES.create(f"vlm-instance:owlv2={tiny['owlv2']}",
                                    options=_options(server)), InstanceJudge)


def test_evidence_labels_and_caps_reach_the_report(pytester: pytest.Pytester,
                                                   server: ChatServer,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_imagetime.judges.instance.load_detector",
                        lambda argument: GivenDetector())
    server.state.responder = parse_then_judge(["the cook"])
    write_case_file(pytester.path / "k.yaml", [case_dict(
        levels=["L0", "L1", "L2"],
        applicable={"constraint": False, "quantity": False, "occlusion": False})])
    pytester.runpytest(
        "k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
        "--imagetime-judge=vlm-instance", f"--imagetime-judge-base-url={server.base_url}",
        "--imagetime-judge-key-env=none")
    report = json.loads((pytester.path / "reports" / "procedural" / "vlm-instance"
                         / "report.json").read_text())
    [item] = report["items"]
    assert "grounded_subject_missing" in item["labels"]
    assert any(c.startswith("grounded-subject-lost: ") and "C2 8->4" in c
               for c in item["caps"])
