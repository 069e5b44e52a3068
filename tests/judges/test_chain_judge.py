"""The question-chain judge with the real openai client against the local server, and the
agreement of two judges' stored judgments."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.backends.registry import JUDGES
from pytest_imagetime.cases.model import Case
from pytest_imagetime.cli import main
from pytest_imagetime.judges.base import JudgeOptions, SheetToJudge
from pytest_imagetime.judges.chain import ChainJudge
from pytest_imagetime.judges.chain_questions import CHAIN_VERSION, questions
from pytest_imagetime.models.base import GenerationRequest
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.report.json_report import validate_report
from pytest_imagetime.rubric.judgment import JudgeError, Judgment, validate_judgment
from tests.builders import case_dict, make_case, write_case_file
from tests.fake_openai import ChatServer, ServerState, chat_server

Rule = Callable[[str], str]


def good(qid: str) -> str:
    """A sheet where everything holds and nothing forbidden is seen."""
    return "no" if qid.startswith("forbidden:") else "yes"


def with_answers(**special: str) -> Rule:
    return lambda qid: special.get(qid, good(qid))


def responder(rule: Rule, case: Case | None = None) -> Callable[[dict[str, Any]], str]:
    """Answers each question by its id: from the batched schema's id list, or (one by one)
    by finding the question's text among the case's questions."""
    by_text = {q.text: q.id for q in questions(case)} if case else {}

    def answer(request: dict[str, Any]) -> str:
        fmt = request["response_format"]["json_schema"]
        if fmt["name"] == "imagetime_chain_answers":
            ids = fmt["schema"]["properties"]["answers"]["items"]["properties"]["id"]["enum"]
            return json.dumps({"answers": [{"id": i, "answer": rule(i), "evidence": "seen"}
                                           for i in ids]})
        text = request["messages"][1]["content"][0]["text"]
        asked = re.search(r"Question: (.*)\n\nAnswer with", text, re.S)
        assert asked is not None
        return json.dumps({"answer": rule(by_text[asked.group(1)]), "evidence": "seen"})

    return answer


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState()) as running:
        yield running


def _judge(server: ChatServer, mode: str | None = None, **overrides: Any) -> ChainJudge:
    values: dict[str, Any] = {"base_url": server.base_url, "key_env": None, "retries": 1,
                              "reasks": 1,
                              "timeout_s": 5.0, "price_per_mtok": (2.0, 8.0)}
    values.update(overrides)
    return ChainJudge(mode, options=JudgeOptions(**values))


def _sheet(case: Case) -> SheetToJudge:
    image = ProceduralModel().generate(request=GenerationRequest(case, "prompt-only", 128, 1)).image
    return SheetToJudge(case, "prompt-only", image, Path("x.png"), "0" * 64)


def test_questions_name_the_panel_of_each_predicate() -> None:
    case = make_case(constraint=True)
    texts = {q.id: q.text for q in questions(case)}
    assert texts["predicate:p2"] == "In panel t2 (top-right), is it true that the jug is tilted?"
    assert texts["forbidden:f1"] == "Does any panel show this: water in the glass at t1?"
    assert texts["phase:t3"] == "Does panel t3 (bottom-left) show this state: half full?"
    assert texts["temporal:1"].startswith("Across panels t1 to t4, is it true that the water")
    assert "D13:prohibitions" in texts
    assert "D13:prohibitions" not in {q.id for q in questions(make_case())}


def test_batched_answers_become_verdicts_and_scores(server: ChatServer, case: Case) -> None:
    server.state.responder = responder(good)
    judge = _judge(server)
    judgment = judge.judge(sheet=_sheet(case))
    validate_judgment(judgment, case, "prompt-only", judge.scored_dims)
    assert judge.name == "vlm-chain" and judge.scored_dims == {"C0", "D8", "D9", "D13"}
    assert {d: v for d, v in judgment.scores.items() if v is not None} == \
        {"C0": 10, "D8": 10, "D9": 10}
    assert [v.value for v in judgment.predicates] == [True] * 4
    assert [v.value for v in judgment.forbidden] == [False]
    assert judgment.prompt_version == CHAIN_VERSION and judgment.labels == ()
    assert judgment.cost_usd == pytest.approx((1500 * 2 + 500 * 8) / 1e6)
    (request,) = server.state.requests
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert "[predicate:p2] In panel t2 (top-right)" in request["messages"][1]["content"][0]["text"]
    assert "phases shown: t1 yes, t2 yes, t3 yes, t4 yes" in judgment.rationale


def test_each_answer_maps_to_its_verdict_and_share(server: ChatServer) -> None:
    case = make_case(constraint=True)
    server.state.responder = responder(with_answers(**{
        "predicate:p2": "no", "predicate:p3": "unsure", "forbidden:f1": "yes",
        "phase:t3": "unsure", "D9:distinct": "no"}))
    judge = _judge(server)
    judgment = judge.judge(sheet=_sheet(case))
    validate_judgment(judgment, case, "prompt-only", judge.scored_dims)
    assert [v.value for v in judgment.predicates] == [True, False, None, True]
    assert [(v.id, v.value) for v in judgment.forbidden] == [("f1", True)]
    # D8: 4 phase + 3 fixed questions, phase t3 not yes -> 6/7; D9: 4 phase + 1 temporal
    # + 4 fixed, phase t3 and "distinct" not yes -> 7/9; D13: f1 seen, prohibitions kept -> 1/2
    assert (judgment.scores["D8"], judgment.scores["D9"], judgment.scores["D13"]) == (8, 7, 5)
    assert judgment.scores["C0"] == 10
    assert judgment.labels == ("copied_phases", "constraint_violation")
    assert "D9 7/9" in judgment.rationale


def test_one_by_one_asks_each_question_and_agrees(server: ChatServer, case: Case) -> None:
    rule = with_answers(**{"predicate:p4": "no", "D8:onset": "no"})
    server.state.responder = responder(rule, case)
    judge = _judge(server, "one-by-one")
    assert judge.name == "vlm-chain:one-by-one"
    one = judge.judge(sheet=_sheet(case))
    assert len(server.state.requests) == len(questions(case))
    assert one.tokens_in == 1500 * len(questions(case))
    batched = _judge(server).judge(sheet=_sheet(case))
    assert one.scores == batched.scores and one.predicates == batched.predicates
    assert one.scores["D8"] == 8  # 6 of 7


def test_an_incomplete_answer_is_asked_again_then_fails(server: ChatServer,
                                                        case: Case) -> None:
    complete = responder(good)

    def drops_one(request: dict[str, Any]) -> str:
        answer = json.loads(complete(request))
        answer["answers"] = [a for a in answer["answers"] if a["id"] != "phase:t4"]
        return json.dumps(answer)

    server.state.responder = drops_one
    with pytest.raises(JudgeError, match=r"vlm-chain: no valid answer after 2 attempts: "
                                         r"answers missing for \['phase:t4'\]"):
        _judge(server).judge(sheet=_sheet(case))
    server.state.fault_queue = ["500"]
    with pytest.raises(JudgeError, match="HTTP 500"):
        _judge(server, retries=0).judge(sheet=_sheet(case))


def test_the_registry_builds_it_and_rejects_unknown_modes(server: ChatServer) -> None:
    options = JudgeOptions(base_url=server.base_url, key_env=None)
    judge = JUDGES.create("vlm-chain:one-by-one", options=options)
    assert isinstance(judge, ChainJudge) and judge.mode == "one-by-one"
    assert judge.config()["mode"] == "one-by-one"
    with pytest.raises(ValueError, match=r"vlm-chain:batched .* vlm-chain:one-by-one"):
        JUDGES.create("vlm-chain:all-at-once", options=options)


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    with pytest.raises(ValueError, match=r"vlm-chain judge needs an API key in the environment "
                                         r"variable JUDGE_KEY.*--imagetime-judge=pixel"):
        ChainJudge(None, options=JudgeOptions(key_env="JUDGE_KEY"))


def test_a_run_with_the_chain_judge_and_its_agreement_with_the_structured_judge(
        pytester: pytest.Pytester, server: ChatServer,
        capsys: pytest.CaptureFixture[str]) -> None:
    write_case_file(pytester.path / "k.yaml", [case_dict(), case_dict("kitchen-pour-water-2",
                                                                      variant=2)])
    args = ["k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
            f"--imagetime-judge-base-url={server.base_url}", "--imagetime-judge-key-env=none"]
    pytester.runpytest(*args, "--imagetime-judge=vlm").assert_outcomes(passed=2)
    server.state.responder = responder(with_answers(**{"predicate:p2": "no"}))
    chain = pytester.runpytest(*args, "--imagetime-judge=vlm-chain")
    chain.assert_outcomes(failed=2)  # p2 fails: a predicate condition, as with any judge
    chain.stdout.fnmatch_lines(["*predicate p2 (t2) not satisfied*"])
    out = pytester.path / "reports" / "procedural"
    report = json.loads((out / "vlm-chain" / "report.json").read_text())
    validate_report(report)
    assert report["aggregate"]["errors"] == 0
    assert report["aggregate"]["dims"]["D9"]["n"] == 2
    assert report["aggregate"]["dims"]["C5"]["mean"] is None
    record = json.loads((out / "vlm-chain" / "judgments" / "kitchen-pour-water-1.json")
                        .read_text())
    assert record["judgment"]["prompt_version"] == CHAIN_VERSION
    assert record["judge_config"]["mode"] == "batched"

    capsys.readouterr()
    assert main(["judges-agree", str(out), "--a", "vlm", "--b", "vlm-chain",
                 "--cases", str(pytester.path / "k.yaml"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    overall = result["overall"]
    assert overall["sheets"] == 2 and result["unpaired"] == []
    # The structured judge says every predicate holds; the chain says p2 fails: 8 of 10.
    assert overall["predicates"] == {"n": 10, "accuracy": 80.0, "kappa": 0.0}
    assert overall["forbidden"] == {"n": 4, "accuracy": 100.0, "kappa": None}
    structured = [Judgment.from_json(json.loads(p.read_text())["judgment"])
                  for p in sorted((out / "vlm" / "judgments").glob("*.json"))]
    expected = sum(abs(10 - (j.scores["D9"] or 0)) for j in structured) / 2
    assert overall["dims"]["D9"]["mae"] == pytest.approx(expected)
    assert overall["dims"]["D13"] == {"n": 0, "mae": None, "spearman": None}
    assert list(result["by_domain"]) == ["Kitchen"]
    assert main(["judges-agree", str(out / "vlm-chain"), "--cases",
                 str(pytester.path / "k.yaml")]) == 0
    table = capsys.readouterr().out
    assert "judges agree: vlm vs vlm-chain" in table and "Kitchen" in table
    assert main(["judges-agree", str(out), "--b", "pixel",
                 "--cases", str(pytester.path / "k.yaml")]) == 2


def test_cached_input_of_the_question_chain_is_priced_at_its_rate(server: ChatServer,
                                                                 case: Case) -> None:
    server.state.responder = responder(good, case)
    server.state.cache_prefix_tokens = 1024
    judge = _judge(server, "one-by-one", price_per_mtok=(2.0, 8.0, 0.2))
    judgment = judge.judge(sheet=_sheet(case))
    calls = len(server.state.requests)
    assert calls > 1 and judgment.tokens_cached == 1024 * (calls - 1)
    assert judgment.cost_usd == pytest.approx(
        ((judgment.tokens_in - judgment.tokens_cached) * 2.0 + judgment.tokens_cached * 0.2
         + judgment.tokens_out * 8.0) / 1e6)
    assert _judge(server, price_per_mtok=None, model="mystery").judge(
        sheet=_sheet(case)).cost_usd is None
