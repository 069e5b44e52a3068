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
from tests.tempviz_data import write_tables

ITEMS = ("Maps-0", "Maps-1", "Animals-0", "Landscapes-0")


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState()) as running:
        yield running


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """Stored TempViz images of one model, as the suite writes them."""
    folder = tmp_path / "reports" / "flux-dev" / "tempviz" / "images"
    folder.mkdir(parents=True)
    for n, item in enumerate(ITEMS):
        Image.new("RGB", (16, 16), (40 * n, 90, 200)).save(folder / f"{item}.png")
        (folder / f"{item}.json").write_text(json.dumps({"model": "flux-dev", "id": item}))
    return tmp_path / "reports"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_tables(tmp_path / "tempviz")


def texts(request: dict[str, Any]) -> list[str]:
    return [part["text"] for m in request["messages"] if m["role"] == "user"
            for part in m["content"] if part["type"] == "text"]


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
