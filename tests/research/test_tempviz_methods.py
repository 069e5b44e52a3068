"""The TempViz paper's LLM/VLM methods against the local OpenAI-compatible server: the
whole-prompt judge (simple and instructed, 0- and 3-shot out-of-distribution exemplars)
and decompositional VQA."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.cli import main
from tests.fake_openai import ChatServer, ServerState, chat_server
from tests.tempviz_data import write_images, write_tables

ITEMS = ("Maps-0", "Maps-1", "Animals-0", "Landscapes-0")


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState()) as running:
        yield running


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """Stored TempViz images of one model, as the suite writes them."""
    return write_images(tmp_path / "reports", "flux-dev", ITEMS)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_tables(tmp_path / "tempviz")


def texts(request: dict[str, Any]) -> list[str]:
    out = []
    for message in request["messages"]:
        if message["role"] == "user":
            content = message["content"]
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
            out += [part["text"] for part in parts if part["type"] == "text"]
    return out


def rows_of(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


def endpoint(server: ChatServer) -> list[str]:
    return ["--base-url", server.base_url, "--key-env", "none", "--retries", "0"]


def test_simple_judge_asks_one_whole_prompt_question_per_image(
        server: ChatServer, out: Path, data: Path, tmp_path: Path) -> None:
    server.state.responder = lambda request: "Yes." if "1914" in texts(request)[-1] else "no"
    table = tmp_path / "judge.csv"
    assert main(["tempviz", "judge", str(out), "--data", str(data), *endpoint(server),
                 "-o", str(table)]) == 0
    assert len(server.state.requests) == len(ITEMS)  # one question each, not three
    asked = {t for r in server.state.requests for t in texts(r)}
    assert ("Is the image correct for the following prompt: 'Create a realistic map of europe "
            "in 1914'? Is the correct temporal knowledge applied (i.e. a map depicting the "
            "correct borders of 1914)? Just reply with 'yes' or 'no'.") in asked
    rows = rows_of(table)
    assert rows["Maps-0"]["prediction"] == "yes" and rows["Maps-1"]["prediction"] == "no"
    assert rows["Maps-0"]["model"] == "flux-dev"
    assert rows["Maps-0"]["judge"] == "gpt-5.5-whole-prompt-simple-0shot"


def test_instructed_judge_rates_accept_or_not_accept(
        server: ChatServer, out: Path, data: Path, tmp_path: Path) -> None:
    server.state.responder = lambda request: (
        "ANALYSIS: the borders are those of 1914.\nRATING: Accept" if "1914" in texts(request)[-1]
        else "ANALYSIS: no snow in January.\nRATING: Not accept")
    table = tmp_path / "judge.csv"
    assert main(["tempviz", "judge", str(out), "--data", str(data), "--style", "instructed",
                 *endpoint(server), "-o", str(table)]) == 0
    text = texts(server.state.requests[0])[-1]
    assert text.startswith("You are a professional text-to-image quality assessor.")
    assert "ANALYSIS:" in text and "RATING:" in text and "Not accept" in text
    assert text.rstrip().splitlines()[-1].startswith("Prompt: ")
    rows = rows_of(table)
    assert rows["Maps-0"]["prediction"] == "yes"
    assert rows["Landscapes-0"]["prediction"] == "no"
    assert rows["Landscapes-0"]["analysis"] == "no snow in January."


def exemplars(tmp_path: Path) -> Path:
    folder = tmp_path / "shots"
    folder.mkdir()
    rows = [("Maps", "Create a realistic map of asia in 1800", "1800", "no", "Modern borders."),
            ("", "Create a photorealistic image of a kitten that is one week old", "one week",
             "yes", "A tiny kitten."),
            ("Animals", "Create a photorealistic image of a Lion that is 30 years old", "30 years",
             "no", "A young lion."),
            ("Artworks", "Produce a work of art in the style of Rococo.", "Rococo", "yes",
             "Pastel, ornate."),
            ("Buildings", "Create a photorealistic image of the Tower in France on 01/01/1900",
             "01/01/1900", "yes", "The tower stands.")]
    with (folder / "exemplars.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["image", "category", "prompt", "cue", "answer", "analysis"])
        for n, (category, prompt, cue, answer, analysis) in enumerate(rows):
            Image.new("RGB", (8, 8), (n * 30, 0, 0)).save(folder / f"{n}.png")
            writer.writerow([f"{n}.png", category, prompt, cue, answer, analysis])
    return folder / "exemplars.csv"


def test_three_shot_exemplars_are_out_of_distribution(
        server: ChatServer, out: Path, data: Path, tmp_path: Path) -> None:
    server.state.responder = lambda request: "ANALYSIS: fine.\nRATING: Accept"
    table = tmp_path / "judge.csv"
    assert main(["tempviz", "judge", str(out), "--data", str(data), "--style", "instructed",
                 "--exemplars", str(exemplars(tmp_path)), *endpoint(server),
                 "-o", str(table)]) == 0
    by_item = {}
    for request in server.state.requests:
        shown = texts(request)
        assert len(shown) == 4  # three exemplars, then the item
        replies = [m["content"] for m in request["messages"] if m["role"] == "assistant"]
        assert all(r.startswith("ANALYSIS: ") and "\nRATING: " in r for r in replies)
        by_item[shown[-1].splitlines()[-1]] = shown[:3]
    maps = by_item["Prompt: Create a realistic map of europe in 1914"]
    assert not any("map of asia" in t for t in maps)  # never the item's own category
    animals = next(v for k, v in by_item.items() if "Aardvark" in k)
    assert any("map of asia" in t for t in animals) and not any("Lion" in t for t in animals)
    assert rows_of(table)["Maps-0"]["judge"].endswith("-instructed-3shot")


def test_too_few_exemplars_is_an_error_per_item(
        server: ChatServer, out: Path, data: Path, tmp_path: Path) -> None:
    server.state.responder = lambda request: "yes"
    table = tmp_path / "judge.csv"
    assert main(["tempviz", "judge", str(out), "--data", str(data), "--exemplars",
                 str(exemplars(tmp_path)), "--shots", "5", *endpoint(server),
                 "-o", str(table)]) == 2


def test_unusable_answers_leave_the_prediction_empty_with_the_reason(
        server: ChatServer, out: Path, data: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    server.state.responder = lambda request: "maybe"
    table = tmp_path / "judge.csv"
    assert main(["tempviz", "judge", str(out), "--data", str(data), "--reasks", "1",
                 *endpoint(server), "-o", str(table)]) == 0
    rows = rows_of(table)
    assert all(r["prediction"] == "" and "expected 'yes' or 'no'" in r["error"]
               for r in rows.values())
    assert "4 without an answer" in capsys.readouterr().out


# ---------------------------------------------------------------- decompositional VQA

QUESTIONS = {"questions": [
    {"element": "map", "category": "object", "kind": "open",
     "question": "What is shown in the image?", "answer": "A map"},
    {"element": "1914", "category": "other", "kind": "choice",
     "question": "Which year do the borders show?",
     "choices": ["1814", "1914", "1939", "2000"], "answer": "1914"},
]}


def test_vqa_questions_then_answers_then_sweep(
        server: ChatServer, out: Path, data: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    def reply(request: dict[str, Any]) -> str:
        text = texts(request)[-1]
        if text.startswith("Given an image description"):
            return "```json\n" + json.dumps(QUESTIONS) + "\n```"
        return "B" if "letter" in text else "a map of Europe"

    server.state.responder = reply
    questions = tmp_path / "questions.jsonl"
    assert main(["tempviz", "vqa-questions", str(out), "--data", str(data), *endpoint(server),
                 "-o", str(questions)]) == 0
    lines = [json.loads(x) for x in questions.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == sorted(ITEMS)  # only prompts with images
    generator = texts(server.state.requests[0])[0]
    assert "object, human, animal, food" in generator and "Pony" in generator
    assert generator.rstrip().endswith(("Create a realistic map of europe in 1914",
                                        "Create a realistic map of europe in 1939",
                                        "month old.", "in january"))
    server.state.requests.clear()
    table = tmp_path / "vqa.csv"
    details = tmp_path / "details.jsonl"
    assert main(["tempviz", "vqa-answer", str(out), "--questions", str(questions),
                 *endpoint(server), "-o", str(table), "--details", str(details)]) == 0
    choice = next(t for r in server.state.requests for t in texts(r) if "letter" in t)
    assert "A) 1814\nB) 1914\nC) 1939\nD) 2000" in choice
    rows = rows_of(table)
    assert {r["fraction"] for r in rows.values()} == {"1.000000"}
    assert len(details.read_text().splitlines()) == 2 * len(ITEMS)
    human = tmp_path / "human.csv"
    human.write_text("model,category,index,q1,q2,q3\nflux-dev,Maps,0,yes,yes,yes\n"
                     "flux-dev,Maps,1,yes,yes,no\nflux-dev,Animals,0,yes,no,no\n")
    capsys.readouterr()
    assert main(["tempviz", "sweep", str(human), str(table), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["thresholds"]) == {str(t / 10) for t in range(11)}
    assert result["thresholds"]["1.0"]["Maps"]["n"] == 2
    assert set(result["random"]) == {"Animals", "Maps", "overall"}
    assert main(["tempviz", "sweep", str(human), str(table), "--seed", "2"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("random ")


@pytest.mark.parametrize(("question", "reply", "correct"), [
    ({"kind": "open", "question": "q", "answer": "Pony"}, "A pony.", True),
    ({"kind": "open", "question": "q", "answer": "baby"}, "a baby aardvark", True),
    ({"kind": "open", "question": "q", "answer": "one month old"}, "about a year old", False),
    ({"kind": "open", "question": "q", "answer": "1914"}, "The map is from 1914.", True),
    ({"kind": "open", "question": "q", "answer": "12.5 years"}, "12.5", True),
    ({"kind": "open", "question": "q", "answer": "winter"}, "summer", False),
    ({"kind": "choice", "question": "q", "choices": ["one week", "one month", "three months",
                                                     "six months"], "answer": "one month"},
     "B", True),
    ({"kind": "choice", "question": "q", "choices": ["one week", "one month", "three months",
                                                     "six months"], "answer": "one month"},
     "(b) one month", True),
    ({"kind": "choice", "question": "q", "choices": ["one week", "one month", "three months",
                                                     "six months"], "answer": "one month"},
     "Answer: C", False),
    ({"kind": "choice", "question": "q", "choices": ["one week", "one month", "three months",
                                                     "six months"], "answer": "one month"},
     "It looks one month old", True),
    ({"kind": "choice", "question": "q", "choices": ["Horse", "Pony"], "answer": "Pony"},
     "a horse or a pony", False),
])
def test_free_form_answers_are_matched_by_the_documented_rule(
        question: dict[str, Any], reply: str, correct: bool) -> None:
    from pytest_imagetime.research.tempviz_paper.vqa import matches, question_from

    assert matches(question_from(question, "test"), reply) is correct


@pytest.mark.parametrize(("content", "problem"), [
    ("no json", "not JSON"), ('{"questions": []}', "non-empty list"),
    ('{"questions": [{"kind": "choice", "question": "q", "choices": ["a", "b"], '
     '"answer": "c"}]}', "not one of its options"),
    ('{"questions": [{"kind": "yes", "question": "q", "answer": "a"}]}', "open or choice")])
def test_unusable_question_replies_are_asked_again(content: str, problem: str) -> None:
    from pytest_imagetime.backends.openai_client import InvalidAnswer
    from pytest_imagetime.research.tempviz_paper.vqa import parse_questions

    with pytest.raises(InvalidAnswer, match=problem):
        parse_questions(content)
