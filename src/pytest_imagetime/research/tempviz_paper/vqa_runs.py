"""``imagetime tempviz vqa-questions`` and ``vqa-answer``: decompositional VQA over stored
TempViz images, one file of questions per prompt set and one table of scores per image model.

The questions file is JSON Lines, one prompt a line: ``id, category, index, prompt,
generator, questions`` (or ``error``). The score table has ``model, id, category, index,
questions, correct, fraction, error``; ``imagetime tempviz sweep`` thresholds ``fraction``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PIL import Image

from ...backends.openai_client import InvalidAnswer
from ...judges.vlm import image_data_url
from ...rubric.judgment import JudgeError
from ...store.atomic import atomic_write_bytes
from ...tempviz.judge import TextAsker
from ...tempviz.prompts import Prompt
from .images import TempvizImage
from .vqa import (
    Question,
    answer_question,
    generate_questions,
    matches,
    question_from,
    score,
)

SCORE_COLUMNS = ("model", "id", "category", "index", "questions", "correct", "fraction",
                 "error")
KEY_HINT = "--key-env NAME for another variable, 'none' for a server without keys"


def write_questions(asker: TextAsker, prompts: Sequence[Prompt], path: Path,
                    concurrency: int) -> list[dict[str, Any]]:
    def one(prompt: Prompt) -> dict[str, Any]:
        line: dict[str, Any] = {"id": prompt.id, "category": prompt.category,
                                "index": prompt.index, "prompt": prompt.prompt,
                                "generator": asker.model}
        try:
            line["questions"] = [q.as_dict() for q in generate_questions(asker, prompt.prompt)]
        except JudgeError as exc:
            line["error"] = str(exc)
        return line

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        lines = list(pool.map(one, prompts))
    atomic_write_bytes(path, "".join(json.dumps(line) + "\n" for line in lines).encode())
    return lines


def read_questions(path: Path) -> dict[str, list[Question]]:
    """Questions by item id; ValueError naming the file and line."""
    out: dict[str, list[Question]] = {}
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not text.strip():
            continue
        where = f"{path}:{number}"
        try:
            line = json.loads(text)
            if "error" in line and "questions" not in line:
                continue  # a prompt the generator failed on: its images are left out
            out[str(line["id"])] = [question_from(q, f"{where}: question {n}")
                                    for n, q in enumerate(line["questions"], start=1)]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{where}: not a questions line: {exc}") from None
        except InvalidAnswer as exc:  # a question that parses but breaks the questions' rules
            raise ValueError(str(exc)) from None
    return out


def answer_images(asker: TextAsker, images: Sequence[TempvizImage],
                  questions: Mapping[str, list[Question]], concurrency: int
                  ) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """A score row per image that has questions, and every reply with its verdict."""
    def one(image: TempvizImage) -> tuple[dict[str, str], list[dict[str, Any]]]:
        asked = questions[image.id]
        row = {"model": image.model, "id": image.id, "category": image.category,
               "index": image.index, "questions": str(len(asked)), "correct": "",
               "fraction": "", "error": ""}
        try:
            with Image.open(image.path) as picture:
                url = image_data_url(picture, image.path)
            replies = [answer_question(asker, q, url) for q in asked]
        except (JudgeError, OSError) as exc:
            return {**row, "error": str(exc)}, []
        correct, fraction = score(asked, replies)
        details = [{"model": image.model, "id": image.id, **q.as_dict(), "reply": r,
                    "correct": matches(q, r)} for q, r in zip(asked, replies, strict=True)]
        return {**row, "correct": str(correct), "fraction": f"{fraction:.6f}"}, details

    todo = [i for i in images if i.id in questions]
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        results = list(pool.map(one, todo))
    return [r for r, _ in results], [d for _, ds in results for d in ds]
