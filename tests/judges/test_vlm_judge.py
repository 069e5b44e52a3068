"""The vlm judge with the real openai client against a real local server, faults included."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.cases.model import Case
from pytest_imagetime.judges.base import JudgeOptions, SheetToJudge
from pytest_imagetime.judges.prompt import PROMPT_VERSION, response_schema
from pytest_imagetime.judges.vlm import VlmJudge
from pytest_imagetime.models.base import GenerationRequest
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.rubric.judgment import JudgeError, validate_judgment
from tests.fake_openai import FAULTS, ChatServer, ServerState, chat_server

KEY = "sk-test-0123456789abcdef-SECRET"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as running:
        yield running


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


def _judge(server: ChatServer, **overrides: object) -> VlmJudge:
    values: dict[str, object] = {"base_url": server.base_url, "retries": 1, "timeout_s": 5.0,
                                 "price_per_mtok": (2.0, 8.0)}
    values.update(overrides)
    return VlmJudge(None, options=JudgeOptions(**values))  # type: ignore[arg-type]


def _sheet(case: Case) -> SheetToJudge:
    image = ProceduralModel().generate(request=GenerationRequest(case, "prompt-only", 128, 1)).image
    return SheetToJudge(case, "prompt-only", image, Path("x.png"), "0" * 64)


def test_request_shape_and_a_valid_judgment(server: ChatServer, key: str, case: Case) -> None:
    judge = _judge(server)
    judgment = judge.judge(sheet=_sheet(case))
    validate_judgment(judgment, case, "prompt-only")
    (request,) = server.state.requests
    assert request["model"] == "gpt-5.5"
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == response_schema(case, "prompt-only")
    system, user = request["messages"]
    assert "ImageTime" in system["content"] and "lower one" in system["content"]
    image_part = user["content"][-1]["image_url"]
    assert image_part["url"].startswith("data:image/png;base64,")
    decoded = Image.open(io.BytesIO(base64.b64decode(image_part["url"].split(",", 1)[1])))
    assert decoded.size == (128, 128)
    assert server.state.headers[0]["authorization"] == f"Bearer {KEY}"
    assert judgment.judge_model == "gpt-5.5" and judgment.prompt_version == PROMPT_VERSION
    assert (judgment.tokens_in, judgment.tokens_out) == (1500, 500)
    assert judgment.cost_usd == pytest.approx((1500 * 2 + 500 * 8) / 1e6)
    assert {v.id for v in judgment.predicates} == {p.id for p in case.predicates}
    assert judgment.scores["C1"] is None and judgment.scores["C0"] is not None


def test_extra_params_and_json_object_mode(server: ChatServer, key: str, case: Case) -> None:
    judge = _judge(server, params={"temperature": 0, "reasoning_effort": "high"},
                   response_format="json_object", model="local-vlm")
    judge.judge(sheet=_sheet(case))
    (request,) = server.state.requests
    assert request["temperature"] == 0 and request["reasoning_effort"] == "high"
    assert request["model"] == "local-vlm"
    assert request["response_format"] == {"type": "json_object"}
    # The case's own schema goes in the message, after the case.
    texts = [part["text"] for part in request["messages"][1]["content"] if "text" in part]
    assert "Case specification (JSON)" in texts[0] and '"diagnostic"' in texts[1]


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_is_retried_then_judged(server: ChatServer, key: str, case: Case,
                                           fault: str) -> None:
    server.state.fault_queue = [fault]
    server.state.timeout_sleep_s = 3.0
    # Only the timeout fault should time out: a busy machine must not make a retry of its own.
    timeout_s = 1.0 if fault == "timeout" else 30.0
    judgment = _judge(server, timeout_s=timeout_s).judge(sheet=_sheet(case))
    validate_judgment(judgment, case, "prompt-only")
    assert server.state.faults_served[fault] == 1
    assert len(server.state.requests) == 2


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("429", "HTTP 429 from the judge endpoint: rate limited"),
        ("500", "HTTP 500 from the judge endpoint: server error 500"),
        ("503", "HTTP 503"),
        ("timeout", "the judge endpoint timed out (0.4 s a request)"),
        ("reset", "cannot reach the judge endpoint"),
        ("malformed", "the judge endpoint's response is not valid JSON"),
        ("schema", "does not match the schema at (root): 'diagnostic' is a required property"),
        ("refusal", "the judge refused: I cannot help with that."),
        ("empty", "the response has no choices"),
        ("truncated", "cut off (finish_reason=length)"),
    ],
)
def test_without_retries_each_fault_is_an_error_with_its_reason(
        server: ChatServer, key: str, case: Case, fault: str, reason: str) -> None:
    server.state.fault_queue = [fault]
    server.state.timeout_sleep_s = 1.0
    with pytest.raises(JudgeError) as info:
        _judge(server, retries=0, reasks=0, timeout_s=0.4).judge(sheet=_sheet(case))
    assert reason in str(info.value)
    assert "retr" not in str(info.value)  # one request: no claim of retries
    assert KEY not in str(info.value)


def test_invalid_answers_stop_after_the_retries(server: ChatServer, key: str,
                                                case: Case) -> None:
    server.state.fault_queue = ["schema", "refusal", "truncated"]
    with pytest.raises(JudgeError, match=r"no valid judgment after 3 attempts: .*schema.*"
                                         r"refused.*cut off"):
        _judge(server, reasks=2).judge(sheet=_sheet(case))


def test_missing_key_names_the_variable_and_the_offline_judge(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    with pytest.raises(ValueError, match=r"environment variable JUDGE_KEY.*"
                                         r"--imagetime-judge=pixel"):
        VlmJudge(None, options=JudgeOptions(key_env="JUDGE_KEY"))


def test_server_without_keys(server: ChatServer, monkeypatch: pytest.MonkeyPatch,
                             case: Case) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge = VlmJudge(None, options=JudgeOptions(base_url=server.base_url, key_env=None))
    assert not getattr(judge, "cpu_bound", False)  # it waits on a server: the judge pool
    judge.judge(sheet=_sheet(case))
    assert "authorization" not in server.state.headers[0] or \
        server.state.headers[0]["authorization"] == "Bearer unused"


def test_unknown_price_gives_an_unknown_cost_and_says_so(server: ChatServer, key: str,
                                                         case: Case) -> None:
    judge = _judge(server, price_per_mtok=None, model="someone-elses-vlm")
    assert judge.price is None
    assert judge.config()["price_usd_per_mtok"] is None
    assert judge.judge(sheet=_sheet(case)).cost_usd is None


def test_the_state_class_is_shared_safely() -> None:
    state = ServerState(fault_queue=["500"])
    assert state.next_fault() == "500"
    assert state.next_fault() is None
