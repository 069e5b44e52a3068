"""Whole runs against endpoints that fail as real ones do: refused, hanging, a rejected key,
credentials in the base URL; also under xdist, where each worker stops on its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, write_case_file
from tests.fake_openai import ServerState, chat_server, closed_port_url, masked

KEY = "sk-proj-runKEY0123456789abcdefQzQz"
CASES = 6


def _cases(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "k.yaml", [
        case_dict(f"kitchen-pour-water-{i}", variant=1 + i % 2) for i in range(1, CASES + 1)])


def _report(out: Path, run: str = "procedural/vlm") -> dict[str, Any]:
    report: dict[str, Any] = json.loads((out / run / "report.json").read_text())
    validate_report(report)
    return report


def _errors(report: dict[str, Any]) -> set[str]:
    """Each error item's reason, without the item's own prefix."""
    return {i["error"].split(": ", 1)[1] for i in report["items"] if i["status"] == "error"}


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


def test_a_refused_judge_endpoint_ends_every_item_as_one_error(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    _cases(pytester)
    monkeypatch.setenv("OPENAI_BASE_URL", closed_port_url())
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128")
    result.assert_outcomes(errors=CASES)
    report = _report(pytester.path / "reports")
    assert report["aggregate"]["errors"] == CASES and report["aggregate"]["judged"] == 0
    (reason,) = _errors(report)
    assert reason.startswith("not called: the judge endpoint failed once (checked with GET "
                             "/models before the first call: cannot reach the judge endpoint")
    assert "Check the base URL http://127.0.0.1:" in reason
    for item in report["items"]:
        assert item["overall"] is None and set(item["scores"].values()) == {None}
    # What was made is kept: every sheet is stored, ready for a run against a live judge.
    assert len(list((pytester.path / "reports" / "procedural" / "images").glob("*.png"))) \
        == CASES
    result.stdout.fnmatch_lines(["*not called: the judge endpoint failed once*"])


def test_a_hanging_endpoint_stops_each_xdist_worker_at_its_check(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    _cases(pytester)
    with chat_server(ServerState(hang_s=3.0)) as hanging:
        monkeypatch.setenv("OPENAI_BASE_URL", hanging.base_url)
        result = pytester.runpytest("k.yaml", "--imagetime-model=procedural",
                                    "--imagetime-size=128", "--imagetime-judge-timeout=0.5",
                                    "-n", "2")
        result.assert_outcomes(errors=CASES)
        (reason,) = _errors(_report(pytester.path / "reports"))
        assert "timed out (0.5 s a request) after 2 retries" in reason
        assert len(hanging.state.requests) == 0  # no judge call was sent
        assert len(hanging.state.gets) <= 2 * 3  # each worker: one check, retried twice


def test_a_rejected_key_never_reaches_any_output(pytester: pytest.Pytester,
                                                monkeypatch: pytest.MonkeyPatch,
                                                key: str) -> None:
    _cases(pytester)
    with chat_server(ServerState(required_key="sk-proj-the-right-key-000000000")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        # Both JUnit files (the plugin's only when named beside --junitxml): neither holds it.
        result = pytester.runpytest("k.yaml", "--imagetime-model=procedural",
                                    "--imagetime-size=128", "--junitxml=pytest-junit.xml",
                                    "--imagetime-junit=reports/junit.xml",
                                    "--imagetime-html=html", "-rA")
    result.assert_outcomes(errors=CASES)
    (reason,) = _errors(_report(pytester.path / "reports"))
    assert reason.startswith("not called: the judge endpoint failed once (checked with GET "
                             "/models before the first call: HTTP 401 from the judge endpoint: "
                             "Incorrect API key provided: ***. You can find your API key")
    output = result.stdout.str() + result.stderr.str()
    written = [p for p in pytester.path.rglob("*") if p.is_file()]
    assert {"junit.xml", "pytest-junit.xml", "report.json"} <= {p.name for p in written}
    assert any(p.suffix == ".html" for p in written)
    for secret in (KEY, masked(KEY), KEY[-8:]):
        assert secret not in output
        for path in written:
            assert secret.encode() not in path.read_bytes(), path


def test_credentials_in_a_base_url_are_never_stored(pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   key: str) -> None:
    _cases(pytester)
    with chat_server() as server:
        url = server.base_url.replace("http://", "http://alice:s3cret-pw@")
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        result = pytester.runpytest("k.yaml", "--imagetime-model=openai-images",
                                    "--imagetime-size=128", "--imagetime-judge-price=2,8",
                                    "--imagetime-html=html", "--junitxml=pytest-junit.xml")
        outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == CASES  # judged, no errors
    report = _report(pytester.path / "reports", "openai-images/vlm")
    assert report["aggregate"]["judged"] == CASES
    assert report["manifest"]["judge"]["config"]["base_url"] == \
        server.base_url.replace("http://", "http://***@")
    records = list((pytester.path / "reports").rglob("*.json"))
    assert len(records) >= 2 * CASES + 1  # sheets, judgments, the report
    for path in pytester.path.rglob("*"):
        if path.is_file():
            assert b"s3cret-pw" not in path.read_bytes(), path
    assert "s3cret-pw" not in result.stdout.str()


def test_a_refused_images_endpoint_ends_every_item_as_one_error(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    _cases(pytester)
    with chat_server() as judge:
        monkeypatch.setenv("OPENAI_BASE_URL", judge.base_url)
        result = pytester.runpytest("k.yaml", "--imagetime-model=openai-images",
                                    f"--imagetime-model-base-url={closed_port_url()}",
                                    "--imagetime-size=128", "--imagetime-judge-price=2,8")
    result.assert_outcomes(errors=CASES)
    (reason,) = _errors(_report(pytester.path / "reports", "openai-images/vlm"))
    assert reason.startswith("not called: the images endpoint failed once (checked with GET "
                             "/models before the first call: cannot reach the images endpoint")
    assert "(--imagetime-model-base-url or OPENAI_BASE_URL)" in reason
    assert judge.state.requests == []  # nothing to judge
