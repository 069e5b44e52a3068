"""The TempViz paper's runs over stored images, called directly with scripted answers: finding
the images, the whole-prompt judge's rows and decompositional VQA's questions and scores
(research/tempviz_paper/images.py, judging.py, vqa_runs.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.judges.base import JudgeOptions
from pytest_imagetime.research.tempviz_paper.answer_store import AnswerStore
from pytest_imagetime.research.tempviz_paper.images import TempvizImage, find_images
from pytest_imagetime.research.tempviz_paper.judging import COLUMNS, judge_images, load_prompts
from pytest_imagetime.research.tempviz_paper.tally import Tally
from pytest_imagetime.research.tempviz_paper.vqa import Question, question_from
from pytest_imagetime.research.tempviz_paper.vqa_runs import (
    SCORE_COLUMNS,
    Asking,
    answer_images,
    read_questions,
    write_questions,
)
from pytest_imagetime.rubric.judgment import JudgeError
from pytest_imagetime.tempviz.judge import Answer, TextAsker, WholePromptJudge
from pytest_imagetime.tempviz.prompts import Prompt
from tests.tempviz_data import write_tables

Parse = Callable[[str], tuple[str, str | None]]


def _stored(images: Path, stem: str, model: str | None = None) -> Path:
    images.mkdir(parents=True, exist_ok=True)
    png = images / f"{stem}.png"
    Image.new("RGB", (8, 8), (10, 20, 30)).save(png)
    if model is not None:
        (images / f"{stem}.json").write_text(json.dumps({"model": model}))
    return png


def test_images_are_found_from_an_output_a_model_or_a_suite_folder(tmp_path: Path) -> None:
    images = tmp_path / "out" / "flux" / "tempviz" / "images"
    _stored(images, "Maps-0")
    _stored(images, "Animals-12", model="black-forest-labs/FLUX.1-dev")
    expected = {("flux", "Maps", "0", "Maps-0"),
                ("black-forest-labs/FLUX.1-dev", "Animals", "12", "Animals-12")}
    for root in (tmp_path / "out", tmp_path / "out" / "flux",
                 tmp_path / "out" / "flux" / "tempviz"):
        found = find_images([str(root)])
        assert {(i.model, i.category, i.index, i.id) for i in found} == expected


def test_files_that_are_no_tempviz_image_are_left_out(tmp_path: Path) -> None:
    images = tmp_path / "m" / "tempviz" / "images"
    _stored(images, "Maps-1")
    _stored(images, "Cars-1")  # not a category
    _stored(images, "nodash")
    (images / "Maps-2.json").write_text("{}")  # a record without its image
    (images / "Maps-3.png.tmp").write_bytes(b"")
    (images / "Maps-4.json").write_text("not json")
    _stored(images, "Maps-4")  # an unreadable record: named by its folder
    assert sorted(i.id for i in find_images([str(tmp_path)])) == ["Maps-1", "Maps-4"]
    assert {i.model for i in find_images([str(tmp_path)])} == {"m"}


def test_an_image_found_twice_is_listed_once(tmp_path: Path) -> None:
    _stored(tmp_path / "m" / "tempviz" / "images", "Maps-1")
    found = find_images([str(tmp_path), str(tmp_path / "m")])
    assert [i.id for i in found] == ["Maps-1"]


def test_a_path_without_images_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"empty: no TempViz images "
                                         r"\(<model>/tempviz/images/\*\.png\)"):
        find_images([str(tmp_path / "empty")])


@pytest.fixture
def prompts(tmp_path: Path) -> dict[str, Prompt]:
    return load_prompts(write_tables(tmp_path / "data", ["Animals", "Maps"]))


def test_prompts_are_keyed_by_item_id(prompts: dict[str, Prompt]) -> None:
    assert {"Animals-0", "Animals-1", "Maps-0"} <= set(prompts)
    assert all(key == prompt.id for key, prompt in prompts.items())
    assert not any(key.startswith("Artworks") for key in prompts)


def test_a_data_folder_without_tables_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no TempViz table in"):
        load_prompts(tmp_path)


class ScriptedJudge(WholePromptJudge):
    """Answers from a table by prompt id; no endpoint behind it."""

    def __init__(self, replies: dict[str, Answer | JudgeError]) -> None:
        super().__init__(JudgeOptions(model="scripted", calls=False))
        self.replies = replies
        self.urls: list[str] = []

    @property
    def name(self) -> str:
        return "scripted-judge"

    def answer(self, prompt: Prompt, image_url: str) -> tuple[Answer, float]:
        self.urls.append(image_url)
        reply = self.replies[prompt.id]
        if isinstance(reply, JudgeError):
            raise reply
        return reply, 0.001


NO_STORE = AnswerStore(None, enabled=False)


def _tally() -> Tally:
    return Tally("scripted", priced=True)


def _image(tmp_path: Path, stem: str, model: str = "flux") -> TempvizImage:
    category, _, index = stem.rpartition("-")
    return TempvizImage(model, category, index, _stored(tmp_path / model, stem))


def test_judged_rows_keep_the_order_and_carry_answers_and_errors(
        tmp_path: Path, prompts: dict[str, Prompt]) -> None:
    judge = ScriptedJudge({
        "Animals-0": Answer("yes", "a calf", "ANALYSIS: a calf\nRATING: Accept", 1),
        "Animals-1": JudgeError("no valid answer after 2 attempts"),
        "Maps-0": Answer("no", None, "no", 1)})
    images = [_image(tmp_path, "Maps-0"), _image(tmp_path, "Animals-0"),
              _image(tmp_path, "Animals-1")]
    rows = judge_images(judge, images, prompts, 3, NO_STORE, _tally())
    assert [tuple(row) for row in rows] == [COLUMNS] * 3
    assert [(r["id"], r["prediction"], r["analysis"], r["error"]) for r in rows] == [
        ("Maps-0", "no", "", ""), ("Animals-0", "yes", "a calf", ""),
        ("Animals-1", "", "", "no valid answer after 2 attempts")]
    assert {r["judge"] for r in rows} == {"scripted-judge"}
    assert all(url.startswith("data:image/png;base64,") for url in judge.urls)


def test_images_without_a_prompt_are_left_out_and_named(
        tmp_path: Path, prompts: dict[str, Prompt], capsys: pytest.CaptureFixture[str]) -> None:
    judge = ScriptedJudge({"Maps-0": Answer("yes", None, "yes", 1)})
    rows = judge_images(judge, [_image(tmp_path, "Maps-0"), _image(tmp_path, "Maps-99")],
                        prompts, 0, NO_STORE, _tally())
    assert [r["id"] for r in rows] == ["Maps-0"]
    assert "1 images have no row in the tables, left out: Maps-99" in capsys.readouterr().err


def test_an_unreadable_image_is_an_error_row(tmp_path: Path,
                                             prompts: dict[str, Prompt]) -> None:
    broken = tmp_path / "Maps-0.png"
    broken.write_bytes(b"not a picture")
    judge = ScriptedJudge({"Maps-0": Answer("yes", None, "yes", 1)})
    (row,) = judge_images(judge, [TempvizImage("m", "Maps", "0", broken)], prompts, 1,
                          NO_STORE, _tally())
    assert row["prediction"] == "" and "cannot identify image file" in row["error"]


class ScriptedAsker(TextAsker):
    """Replies from a function of the asked text; no endpoint behind it."""

    def __init__(self, reply: Callable[[str], str]) -> None:
        self.model = "scripted-vlm"
        self.price = None
        self.reply = reply
        self.asked: list[str] = []
        self.lock = threading.Lock()

    def ask_text(self, messages: list[dict[str, Any]], parse: Parse
                 ) -> tuple[Answer, int, int]:
        content = messages[-1]["content"]
        text = content if isinstance(content, str) else content[0]["text"]
        with self.lock:
            self.asked.append(text)
        reply = self.reply(text)
        answer, analysis = parse(reply)
        return Answer(answer, analysis, reply, 1), 0, 0


ITEMS: list[dict[str, Any]] = [
    {"element": "subject", "category": "object", "kind": "open",
     "question": "What animal is shown?", "answer": "aardvark"},
    {"element": "age", "category": "time", "kind": "choice", "question": "How old is it?",
     "answer": "young", "choices": ["young", "old"]}]
QUESTIONS = {"questions": ITEMS}


def _asking(asker: ScriptedAsker, concurrency: int) -> Asking:
    return Asking(asker.model, lambda: asker, NO_STORE, _tally(), concurrency)


def _generator(text: str) -> str:
    if "24 years old" in text:
        raise JudgeError("no valid answer after 2 attempts")
    return json.dumps(QUESTIONS)


def test_questions_are_written_per_prompt_with_generator_and_errors(
        tmp_path: Path, prompts: dict[str, Prompt]) -> None:
    asker = ScriptedAsker(_generator)
    chosen = [prompts["Animals-0"], prompts["Animals-1"]]
    path = tmp_path / "questions.jsonl"
    lines = write_questions(_asking(asker, 2), chosen, path)
    stored = [json.loads(line) for line in path.read_text().splitlines()]
    assert stored == lines
    assert [line["id"] for line in lines] == ["Animals-0", "Animals-1"]
    assert lines[0]["generator"] == "scripted-vlm" and len(lines[0]["questions"]) == 2
    assert lines[1]["error"] == "no valid answer after 2 attempts"
    assert "questions" not in lines[1]
    assert list(read_questions(path)) == ["Animals-0"]  # the failed prompt is left out
    assert read_questions(path)["Animals-0"][1].choices == ("young", "old")


@pytest.mark.parametrize(("line", "problem"), [
    ("not json", "not a questions line"),
    ('{"questions": []}', "not a questions line: 'id'"),
    ('{"id": "Maps-0"}', "not a questions line: 'questions'"),
    ('{"id": "Maps-0", "questions": 3}', "not a questions line: 'int' object is not iterable"),
])
def test_a_bad_questions_line_names_the_file_and_line(tmp_path: Path, line: str,
                                                      problem: str) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text('{"id": "Maps-1", "questions": []}\n\n' + line + "\n")
    with pytest.raises(ValueError, match=f"questions.jsonl:3: .*{problem}"):
        read_questions(path)


@pytest.mark.parametrize(("line", "problem"), [
    ('{"id": "Maps-0", "questions": [{"kind": "essay", "question": "q", "answer": "a"}]}',
     "kind 'essay': use open or choice"),
    ('{"id": "Maps-0", "questions": [{"kind": "choice", "question": "q", "answer": "c", '
     '"choices": ["a", "b"]}]}', "the answer 'c' is not one of its options"),
])
def test_a_bad_question_in_a_questions_line_is_a_value_error(tmp_path: Path, line: str,
                                                             problem: str) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=f"questions.jsonl:1: question 1: {problem}"):
        read_questions(path)


def test_answers_are_scored_per_image_with_every_reply(tmp_path: Path) -> None:
    questions = {"Animals-0": [question_from(item, "test") for item in ITEMS], "Maps-0": []}
    asker = ScriptedAsker(lambda text: "An aardvark." if "animal" in text else "B")
    images = [_image(tmp_path, "Animals-0"), _image(tmp_path, "Maps-0"),
              _image(tmp_path, "Maps-7")]  # Maps-7 has no questions: left out
    rows, details = answer_images(_asking(asker, 2), images, questions)
    assert [tuple(row) for row in rows] == [SCORE_COLUMNS] * 2
    assert [(r["id"], r["questions"], r["correct"], r["fraction"], r["error"]) for r in rows] == [
        ("Animals-0", "2", "1", "0.500000", ""), ("Maps-0", "0", "0", "0.000000", "")]
    assert [(d["id"], d["reply"], d["correct"]) for d in details] == [
        ("Animals-0", "An aardvark.", True), ("Animals-0", "B", False)]
    assert details[1]["choices"] == ["young", "old"] and details[0]["model"] == "flux"


def test_an_image_whose_answers_fail_keeps_its_error_and_no_replies(tmp_path: Path) -> None:
    def fail(text: str) -> str:
        raise JudgeError("the endpoint refused the key")

    question = Question("subject", "object", "open", "What animal is shown?", "aardvark")
    rows, details = answer_images(_asking(ScriptedAsker(fail), 1),
                                  [_image(tmp_path, "Animals-0")], {"Animals-0": [question]})
    assert rows == [{"model": "flux", "id": "Animals-0", "category": "Animals", "index": "0",
                     "questions": "1", "correct": "", "fraction": "",
                     "error": "the endpoint refused the key"}]
    assert details == []
