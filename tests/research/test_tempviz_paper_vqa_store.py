"""The answer store of ``imagetime tempviz vqa-questions`` and ``vqa-answer`` run as a user
runs them, against the local OpenAI-compatible server: questions per prompt and replies per
image and question are stored as they arrive, a stored rerun asks nothing (no key, no
server), a failed run resumes with only what is missing, and the cost lines."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cli import main
from tests import tempviz_data
from tests.fake_openai import ChatServer, ServerState, chat_server, closed_port_url
from tests.tempviz_data import write_images, write_tables

ITEMS = ("Maps-0", "Maps-1", "Animals-0")
UNSET_KEY = "IMAGETIME_TEST_KEY_THAT_IS_NOT_SET"
QUESTIONS = {"questions": [
    {"element": "map", "category": "object", "kind": "open",
     "question": "What is shown in the image?", "answer": "A map"},
    {"element": "1914", "category": "other", "kind": "choice",
     "question": "Which year do the borders show?",
     "choices": ["1814", "1914", "1939", "2000"], "answer": "1914"}]}


def reply(request: dict[str, Any]) -> str:
    text = json.dumps(request["messages"])
    if "Given an image description" in text:
        return json.dumps(QUESTIONS)
    return "B" if "letter" in text else "a map of Europe"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState(responder=reply)) as running:
        yield running


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return write_images(tmp_path / "reports", "flux-dev", ITEMS)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_tables(tmp_path / "tempviz")


def endpoint(server: ChatServer) -> list[str]:
    return ["--base-url", server.base_url, "--key-env", "none", "--retries", "0",
            "--concurrency", "1", "--price", "1,1"]


def dead_endpoint(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.delenv(UNSET_KEY, raising=False)
    return ["--base-url", closed_port_url(), "--key-env", UNSET_KEY, "--price", "1,1"]


def questions(out: Path, data: Path, path: Path, *words: str) -> int:
    return main(["tempviz", "vqa-questions", str(out), "--data", str(data), "-o", str(path),
                 *words])


def answers(out: Path, questions_file: Path, table: Path, *words: str) -> int:
    return main(["tempviz", "vqa-answer", str(out), "--questions", str(questions_file),
                 "-o", str(table), *words])


def fail_after(server: ChatServer, answered: int) -> None:
    tempviz_data.fail_after(server, answered, reply)


def summary(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_questions_are_stored_beside_the_file_and_reused_without_a_server(
        server: ChatServer, out: Path, data: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "q.jsonl", tmp_path / "again.jsonl"
    assert questions(out, data, first, *endpoint(server)) == 0
    assert len(server.state.requests) == len(ITEMS)
    assert summary(capsys.readouterr().out) == \
        "asked 3, reused 0 from the store, errors 0, spent $0.0060"
    assert len(list((tmp_path / "paper-vqa-questions").glob("*.json"))) == len(ITEMS)
    assert questions(out, data, second, *dead_endpoint(monkeypatch)) == 0
    assert second.read_bytes() == first.read_bytes()
    assert summary(capsys.readouterr().out) == ("asked 0, reused 3 from the store, errors 0, "
                                                "spent $0.0000, $0.0060 reused from the store")


def test_questions_resume_after_a_failing_server(server: ChatServer, out: Path, data: Path,
                                                 tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    fail_after(server, 1)
    assert questions(out, data, path, *endpoint(server)) == 0
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert sum("error" in line for line in lines) == 2
    server.state.fault_rate = 0.0
    server.state.requests.clear()
    assert questions(out, data, path, *endpoint(server)) == 0
    assert len(server.state.requests) == 2
    assert all("questions" in json.loads(line) for line in path.read_text().splitlines())


def test_another_generator_model_is_asked_again(server: ChatServer, out: Path, data: Path,
                                                tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    assert questions(out, data, path, *endpoint(server)) == 0
    assert questions(out, data, path, *endpoint(server), "--llm-model", "other-llm") == 0
    assert len(server.state.requests) == 2 * len(ITEMS)
    assert {json.loads(x)["generator"] for x in path.read_text().splitlines()} == {"other-llm"}


def questions_file(tmp_path: Path, answer: str = "1914") -> Path:
    asked = json.loads(json.dumps(QUESTIONS))
    asked["questions"][1]["answer"] = answer
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": item, **asked}) + "\n" for item in ITEMS))
    return path


def test_replies_are_stored_per_image_and_question_and_reused_without_a_server(
        server: ChatServer, out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    asked = questions_file(tmp_path)
    assert answers(out, asked, first, *endpoint(server)) == 0
    assert len(server.state.requests) == 2 * len(ITEMS)
    store = out / "flux-dev" / "tempviz" / "paper-vqa"
    assert len(list(store.glob("*.json"))) == 2 * len(ITEMS)
    assert summary(capsys.readouterr().out) == \
        "asked 6, reused 0 from the store, errors 0, spent $0.0120"
    assert answers(out, asked, second, *dead_endpoint(monkeypatch)) == 0
    assert second.read_bytes() == first.read_bytes()
    assert summary(capsys.readouterr().out).startswith("asked 0, reused 6 from the store")


def test_a_new_expected_answer_is_scored_from_the_stored_replies(
        server: ChatServer, out: Path, tmp_path: Path) -> None:
    table = tmp_path / "vqa.csv"
    assert answers(out, questions_file(tmp_path), table, *endpoint(server)) == 0
    assert "1.000000" in table.read_text()
    assert answers(out, questions_file(tmp_path, answer="1939"), table,
                   *endpoint(server)) == 0
    assert len(server.state.requests) == 2 * len(ITEMS)  # the replies decide; not the answer
    assert "0.500000" in table.read_text()


def test_replies_resume_question_by_question(server: ChatServer, out: Path,
                                             tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    table, details = tmp_path / "vqa.csv", tmp_path / "details.jsonl"
    asked = questions_file(tmp_path)
    fail_after(server, 3)  # the first image's two replies and the second image's first
    assert answers(out, asked, table, *endpoint(server), "--details", str(details)) == 0
    text = table.read_text()
    assert text.count("1.000000") == 1
    assert "2 of 2 questions without an answer" in text  # the third image
    assert summary(capsys.readouterr().out).startswith("asked 3, reused 0 from the store, "
                                                       "errors 3")
    server.state.fault_rate = 0.0
    server.state.requests.clear()
    assert answers(out, asked, table, *endpoint(server), "--details", str(details)) == 0
    assert len(server.state.requests) == 3
    assert table.read_text().count("1.000000") == len(ITEMS)
    assert len(details.read_text().splitlines()) == 2 * len(ITEMS)


def test_vqa_answer_max_cost_leaves_error_rows(server: ChatServer, out: Path,
                                               tmp_path: Path) -> None:
    table = tmp_path / "vqa.csv"
    assert answers(out, questions_file(tmp_path), table, *endpoint(server),
                   "--max-cost", "0.004") == 0
    assert len(server.state.requests) == 2
    assert table.read_text().count("not asked: --max-cost reached") == 2


def test_vqa_no_store_keeps_nothing(server: ChatServer, out: Path, data: Path,
                                    tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    assert questions(out, data, path, *endpoint(server), "--no-store") == 0
    assert answers(out, path, tmp_path / "vqa.csv", *endpoint(server), "--no-store") == 0
    assert not (tmp_path / "paper-vqa-questions").exists()
    assert not (out / "flux-dev" / "tempviz" / "paper-vqa").exists()
