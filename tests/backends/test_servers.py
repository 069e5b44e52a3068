"""The documented command line for each kind of server (docs/judging.md, "Servers"), run
against a local server that enforces that server's rules and error shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, write_case_file
from tests.fake_openai import ServerState, chat_server

CASES = 2


def _run(pytester: pytest.Pytester, state: ServerState, *options: str,
         env: dict[str, str]) -> tuple[pytest.RunResult, dict[str, Any], ServerState]:
    write_case_file(pytester.path / "k.yaml", [
        case_dict(f"kitchen-pour-water-{i}", variant=i) for i in range(1, CASES + 1)])
    with chat_server(state) as server, pytest.MonkeyPatch.context() as patch:
        patch.delenv("OPENAI_BASE_URL", raising=False)
        patch.delenv("OPENAI_API_KEY", raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        result = pytester.runpytest(
            "k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
            "--imagetime-judge-price=2,8", *(o.replace("BASE_URL", server.base_url)
                                             for o in options))
    report: dict[str, Any] = json.loads(
        next((pytester.path / "reports").rglob("report.json")).read_text())
    validate_report(report)
    return result, report, state


def _judged(result: pytest.RunResult, report: dict[str, Any]) -> None:
    assert report["aggregate"]["judged"] == CASES and report["aggregate"]["errors"] == 0
    assert "errors" not in result.parseoutcomes()


@pytest.fixture
def openai_state() -> ServerState:
    return ServerState(required_key="sk-proj-openai-key-0123456789", strict_models=True)


def test_openai_gpt5_with_reasoning_effort_and_completion_tokens(
        pytester: pytest.Pytester, openai_state: ServerState) -> None:
    result, report, state = _run(
        pytester, openai_state, "--imagetime-judge-base-url=BASE_URL",
        "--imagetime-judge-model=gpt-5.5", "--imagetime-judge-param=reasoning_effort=medium",
        "--imagetime-judge-param=max_completion_tokens=16000", "--imagetime-judge-param=seed=7",
        env={"OPENAI_API_KEY": "sk-proj-openai-key-0123456789", "OPENAI_ORG_ID": "org-team",
             "OPENAI_PROJECT_ID": "proj_imagetime"})
    _judged(result, report)
    request = state.requests[0]
    assert (request["reasoning_effort"], request["max_completion_tokens"], request["seed"]) \
        == ("medium", 16000, 7)
    assert "temperature" not in request and "max_tokens" not in request
    headers = state.headers[0]
    assert headers["openai-organization"] == "org-team"
    assert headers["openai-project"] == "proj_imagetime"


def test_openai_gpt5_rejects_a_temperature_and_the_run_says_so_once(
        pytester: pytest.Pytester, openai_state: ServerState) -> None:
    result, report, state = _run(
        pytester, openai_state, "--imagetime-judge-base-url=BASE_URL",
        "--imagetime-judge-param=temperature=0", "--imagetime-judge-param=max_tokens=4000",
        env={"OPENAI_API_KEY": "sk-proj-openai-key-0123456789"})
    result.assert_outcomes(errors=CASES)
    assert len(state.requests) == CASES  # a 400 is never retried
    for item in report["items"]:
        assert "HTTP 400 from the judge endpoint: Unsupported value: 'temperature' does not " \
               "support 0 with this model. Only the default (1) value is supported." \
               in item["error"]


def test_azure_openai_v1_endpoint(pytester: pytest.Pytester) -> None:
    state = ServerState(flavour="azure", required_key="azure-key-0123456789abcdef",
                        strict_models=True, models=["imagetime-gpt-5"])
    result, report, state = _run(
        pytester, state, "--imagetime-judge-base-url=BASE_URL",
        "--imagetime-judge-model=imagetime-gpt-5",
        "--imagetime-judge-key-env=AZURE_OPENAI_API_KEY",
        "--imagetime-judge-param=reasoning_effort=low",
        env={"AZURE_OPENAI_API_KEY": "azure-key-0123456789abcdef"})
    _judged(result, report)
    assert all(path.startswith("/openai/v1/") for path in state.paths)
    assert state.requests[0]["model"] == "imagetime-gpt-5"


def test_azure_through_a_gateway_that_wants_its_api_key_header(
        pytester: pytest.Pytester) -> None:
    state = ServerState(flavour="azure", required_key="azure-key-0123456789abcdef")
    result, report, state = _run(
        pytester, state, "--imagetime-judge-base-url=BASE_URL", "--imagetime-judge-key-env=none",
        "--imagetime-judge-header=api-key=$AZURE_OPENAI_API_KEY",
        "--imagetime-judge-header=X-Gateway-Route=imagetime",
        env={"AZURE_OPENAI_API_KEY": "azure-key-0123456789abcdef"})
    _judged(result, report)
    assert state.headers[0]["api-key"] == "azure-key-0123456789abcdef"
    assert state.headers[0]["x-gateway-route"] == "imagetime"
    assert "azure-key-0123456789abcdef" not in json.dumps(report)


def test_vllm(pytester: pytest.Pytester) -> None:
    state = ServerState(flavour="vllm", required_key="vllm-token-abcdef",
                        strict_models=True, models=["Qwen/Qwen2.5-VL-72B-Instruct"])
    result, report, state = _run(
        pytester, state, "--imagetime-judge-base-url=BASE_URL",
        "--imagetime-judge-model=Qwen/Qwen2.5-VL-72B-Instruct",
        "--imagetime-judge-key-env=VLLM_API_KEY", "--imagetime-judge-param=temperature=0",
        "--imagetime-judge-param=max_tokens=4096", "--imagetime-judge-param=seed=0",
        env={"VLLM_API_KEY": "vllm-token-abcdef"})
    _judged(result, report)
    assert state.requests[0]["temperature"] == 0


def test_vllm_with_a_wrong_token_stops_at_the_check(pytester: pytest.Pytester) -> None:
    state = ServerState(flavour="vllm", required_key="vllm-token-abcdef")
    result, report, state = _run(
        pytester, state, "--imagetime-judge-base-url=BASE_URL",
        "--imagetime-judge-key-env=VLLM_API_KEY", env={"VLLM_API_KEY": "not-the-token"})
    result.assert_outcomes(errors=CASES)
    assert "HTTP 401 from the judge endpoint: Unauthorized" in report["items"][0]["error"]
    assert "Check the key in VLLM_API_KEY" in report["items"][0]["error"]
    assert state.requests == []


def test_ollama(pytester: pytest.Pytester) -> None:
    state = ServerState(flavour="ollama", strict_models=True, models=["qwen2.5vl:7b"])
    result, report, state = _run(
        pytester, state, "--imagetime-judge-base-url=BASE_URL",
        "--imagetime-judge-model=qwen2.5vl:7b", "--imagetime-judge-key-env=none",
        "--imagetime-judge-param=temperature=0", env={})
    _judged(result, report)
    assert state.headers[0]["authorization"] == "Bearer unused"


def test_a_header_variable_that_is_not_set_stops_at_start_up(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GATEWAY_KEY", raising=False)
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural",
                                "--imagetime-judge=pixel",
                                "--imagetime-judge-header=X-Api-Key=$GATEWAY_KEY")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--imagetime-judge-header=X-Api-Key=$GATEWAY_KEY: the "
                                 "environment variable GATEWAY_KEY is not set*"])
    assert not Path(pytester.path / "reports").exists()


@pytest.mark.parametrize(
    ("option", "accepted"),
    [
        ("--imagetime-judge-header=no-equals-sign", "give NAME=VALUE with an HTTP header name"),
        ("--imagetime-model-header=Bad Name=x", "give NAME=VALUE with an HTTP header name"),
        ("--imagetime-judge-reasks=-1", "give an integer from 0 to 100"),
    ],
)
def test_bad_endpoint_options_stop_at_start_up(pytester: pytest.Pytester, option: str,
                                               accepted: str) -> None:
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural",
                                "--imagetime-judge=pixel", option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{option}: {accepted}*"])
