"""The feedback judge (UI2V-Bench's reasoning pipeline) with the real openai client against the
local server, and how it compares with the question-chain judge on the same sheets."""

from __future__ import annotations

import base64
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.backends.registry import JUDGES
from pytest_imagetime.cases.model import Case
from pytest_imagetime.cli import main
from pytest_imagetime.judges.base import JudgeOptions, SheetToJudge
from pytest_imagetime.judges.feedback import (
    FEEDBACK_VERSION,
    FeedbackJudge,
    target_of,
    to_rubric,
)
from pytest_imagetime.judges.pixel import pixel_scores
from pytest_imagetime.models.base import GenerationRequest
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.rubric.judgment import JudgeError, validate_judgment
from pytest_imagetime.sheet.metrics import analyze
from tests.builders import case_dict, make_case, write_case_file
from tests.fake_openai import ChatServer, ServerState, chat_server
from tests.judges.test_chain_judge import good

CHAIN = [{"step": "trigger", "question": "Does the cook tilt the jug?"},
         {"step": "feedback", "question": "Does water leave the spout?"},
         {"step": "result", "question": "Does the water level in the glass rise?"},
         {"step": "result", "question": "Is the glass full?"}]


def _image_of(request: dict[str, Any]) -> Image.Image | None:
    for message in request["messages"]:
        for part in message["content"] if isinstance(message["content"], list) else []:
            if part["type"] == "image_url":
                data = part["image_url"]["url"].split(",", 1)[1]
                return Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")
    return None


def _copied(image: Image.Image) -> bool:
    """Whether the panels repeat one picture: what a careful reader would see (the pixel
    facts stand in for the reader's eyes)."""
    return "copied_phases" in analyze(image).implied_labels()


def sheet_reader(chain: list[dict[str, str]] | None = None) -> Callable[[dict[str, Any]], str]:
    """Answers both judges' requests the way a careful reader of the sheet would: copied
    panels are described as unchanged, and the text-only scorer answers from that."""
    written = CHAIN if chain is None else chain

    def answer(request: dict[str, Any]) -> str:
        name = request["response_format"]["json_schema"]["name"]
        image = _image_of(request)
        if name == "imagetime_chain_answers":
            assert image is not None
            copied = _copied(image)
            schema = request["response_format"]["json_schema"]["schema"]
            ids = schema["properties"]["answers"]["items"]["properties"]["id"]["enum"]
            bad = {"D9:distinct", "D8:onset", "D8:intermediate", "D9:final-late"}
            return json.dumps({"answers": [
                {"id": i, "answer": "no" if copied and i in bad else good(i),
                 "evidence": "seen"} for i in ids]})
        if name == "imagetime_feedback_description":
            assert image is not None
            copied = _copied(image)
            return json.dumps({"panels": [
                {"panel": s, "description": "the cook holds the jug upright, unchanged"
                 if copied and s != "t1" else f"the jug tilts further; water level {i}"}
                for i, s in enumerate(("t1", "t2", "t3", "t4"))]})
        assert image is None, "only the description step sees the sheet"
        if name == "imagetime_feedback_chain":
            return json.dumps({"chain": written})
        text = request["messages"][1]["content"]
        count = len(re.findall(r"^\d+\. ", text, re.M))
        still = "unchanged" in text
        answers = [{"n": n, "answer": "yes" if n == 1 or not still else "no",
                    "reason": "from the description"} for n in range(1, count + 1)]
        yes = sum(a["answer"] == "yes" for a in answers)
        return json.dumps({"answers": answers,
                           "target_score": 1 if still else 100,
                           "chain_score": max(1, round(100 * yes / count))})

    return answer


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState()) as running:
        yield running


def _judge(server: ChatServer) -> FeedbackJudge:
    return FeedbackJudge(options=JudgeOptions(base_url=server.base_url, key_env=None,
                                              retries=1, reasks=1, timeout_s=5.0,
                                              price_per_mtok=(2.0, 8.0)))


def _sheet(case: Case, variant: str | None = None) -> SheetToJudge:
    image = ProceduralModel(variant).generate(
        request=GenerationRequest(case, "prompt-only", 128, 1)).image
    return SheetToJudge(case, "prompt-only", image, Path("x.png"), "0" * 64)


def test_the_target_is_the_final_state_and_its_predicates() -> None:
    case = make_case()
    final = [p for p in case.predicates if p.stage in ("t4", "all")]
    target = target_of(case)
    assert target.startswith(case.states["t4"].rstrip("."))
    assert all(p.text.rstrip(".") in target for p in final) and final


def test_scores_map_from_1_100_onto_0_10() -> None:
    assert [to_rubric(s) for s in (1, 50, 90, 100)] == [0, 4, 8, 10]


def test_three_steps_and_the_two_scores(server: ChatServer) -> None:
    case = make_case()
    server.state.responder = sheet_reader()
    judge = _judge(server)
    sheet = _sheet(case)
    judgment = judge.judge(sheet=sheet)
    validate_judgment(judgment, case, "prompt-only", judge.scored_dims)
    assert judge.scored_dims == {"C0", "C6", "D8"}
    assert {d: v for d, v in judgment.scores.items() if v is not None} == {
        "C0": pixel_scores(analyze(sheet.image))["C0"], "C6": 10, "D8": 10}
    assert judgment.raw["target_score"] == 100 and judgment.raw["chain_score"] == 100
    assert judgment.raw["chain"] == CHAIN and judgment.raw["target"] == target_of(case)
    assert list(judgment.raw["description"]) == ["t1", "t2", "t3", "t4"]
    assert "target_score 100, chain_score 100" in judgment.rationale
    assert judgment.prompt_version == FEEDBACK_VERSION and not judgment.evaluates_predicates
    _describe, chain, score = server.state.requests
    assert "Target: " + target_of(case) in chain["messages"][1]["content"]
    assert "Panel t3 (bottom-left): the jug tilts further" in score["messages"][1]["content"]
    assert judgment.cost_usd == pytest.approx(3 * (1500 * 2 + 500 * 8) / 1e6)


def test_copied_panels_read_as_a_broken_chain(server: ChatServer) -> None:
    server.state.responder = sheet_reader()
    judgment = _judge(server).judge(sheet=_sheet(make_case(), "copied"))
    # only the trigger question is yes: chain 25 -> 2, the target not reached
    assert judgment.raw["chain_score"] == 25 and judgment.raw["target_score"] == 1
    assert judgment.scores["C6"] == judgment.scores["D8"] == 2


@pytest.mark.parametrize(("chain", "problem"), [
    (CHAIN[:2], "2 questions, not 3 to 5"),
    (CHAIN + CHAIN[2:], "6 questions"),
    ([CHAIN[1], CHAIN[0], CHAIN[3]], "go back"),
    ([*CHAIN[:3], CHAIN[0]], "go back"),
    ([CHAIN[0], CHAIN[1], CHAIN[1]], "last question must be the target"),
])
def test_a_chain_out_of_the_papers_rules_is_asked_again_then_fails(
        server: ChatServer, chain: list[dict[str, str]], problem: str) -> None:
    server.state.responder = sheet_reader(chain)
    with pytest.raises(JudgeError, match=f"vlm-feedback: no valid answer after 2 attempts: "
                                         f".*{problem}"):
        _judge(server).judge(sheet=_sheet(make_case()))


def test_the_registry_builds_it(server: ChatServer) -> None:
    options = JudgeOptions(base_url=server.base_url, key_env=None)
    assert isinstance(JUDGES.create("vlm-feedback", options=options), FeedbackJudge)
    with pytest.raises(ValueError, match="takes no argument"):
        JUDGES.create("vlm-feedback:fast", options=options)


def test_feedback_and_question_chain_compared_on_the_same_sheets(
        pytester: pytest.Pytester, server: ChatServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_case_file(pytester.path / "k.yaml", [case_dict(), case_dict("kitchen-pour-water-2",
                                                                      variant=2)])
    server.state.responder = sheet_reader()
    d8: dict[str, dict[str, float]] = {}
    for model in ("procedural", "procedural:copied"):
        args = ["k.yaml", f"--imagetime-model={model}", "--imagetime-size=128",
                f"--imagetime-judge-base-url={server.base_url}",
                "--imagetime-judge-key-env=none"]
        for judge in ("vlm-chain", "vlm-feedback"):
            outcomes = pytester.runpytest(*args, f"--imagetime-judge={judge}").parseoutcomes()
            assert "error" not in outcomes and "errors" not in outcomes
        out = pytester.path / "reports" / model.replace(":", "-")
        capsys.readouterr()
        assert main(["judges-agree", str(out), "--a", "vlm-chain", "--b", "vlm-feedback",
                     "--cases", str(pytester.path / "k.yaml"), "--json"]) == 0
        overall = json.loads(capsys.readouterr().out)["overall"]
        assert overall["sheets"] == 2 and overall["dims"]["D8"]["n"] == 2
        d8[model] = {judge: _mean_d8(out / judge) for judge in ("vlm-chain", "vlm-feedback")}
    # both judges rank the good sheets above the copied ones on D8
    for judge in ("vlm-chain", "vlm-feedback"):
        assert d8["procedural"][judge] > d8["procedural:copied"][judge]


def _mean_d8(run: Path) -> float:
    values: list[int] = [json.loads(p.read_text())["judgment"]["scores"]["D8"]
                         for p in sorted((run / "judgments").glob("*.json"))]
    return sum(values) / len(values)
