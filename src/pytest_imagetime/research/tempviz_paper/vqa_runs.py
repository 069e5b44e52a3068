"""``imagetime tempviz vqa-questions`` and ``vqa-answer``: decompositional VQA over stored
TempViz images, one file of questions per prompt set and one table of scores per image model.

The questions file is JSON Lines, one prompt a line: ``id, category, index, prompt,
generator, questions`` (or ``error``). The score table has ``model, id, category, index,
questions, correct, fraction, error``; ``imagetime tempviz sweep`` thresholds ``fraction``.
The LLM's questions per prompt and the VLM's reply per image and question are stored as they
arrive (``answer_store``), so a rerun asks only what is missing.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...backends.openai_client import InvalidAnswer
from ...rubric.judgment import JudgeError
from ...store.atomic import atomic_write_bytes
from ...tempviz.judge import TextAsker
from ...tempviz.prompts import Prompt
from .answer_store import AnswerStore, Slot, image_digest, image_url
from .images import TempvizImage
from .tally import Reply, Tally
from .vqa import (
    VQA_VERSION,
    Question,
    answer_question,
    ask_text,
    generate_questions,
    generator_text,
    matches,
    question_from,
    score,
)

SCORE_COLUMNS = ("model", "id", "category", "index", "questions", "correct", "fraction",
                 "error")
KEY_HINT = "--key-env NAME for another variable, 'none' for a server without keys"
QUESTIONS_STORE = "paper-vqa-questions"  # beside the questions file
ANSWERS_STORE = "paper-vqa"  # beside a run's images/: <model>/tempviz/paper-vqa


@dataclass(frozen=True)
class Asking:
    """Who is asked and how: the model, its request parameters, the asker (made only when
    something is missing from the store), concurrency, the store and the run's tally."""

    model: str
    make: Callable[[], TextAsker]
    store: AnswerStore
    tally: Tally
    concurrency: int = 8
    params: Mapping[str, Any] = field(default_factory=dict)

    def key(self, command: str, text: str, **more: str) -> dict[str, Any]:
        """What decides an answer: the text asked, the model and its parameters (and, for a
        reply about an image, the image's digest); not the endpoint."""
        return {"command": command, "version": VQA_VERSION, "model": self.model,
                "text": text, "params": dict(self.params), **more}


def _questions_usable(value: Any) -> bool:
    if not isinstance(value, list) or not value:
        return False
    try:
        for item in value:
            question_from(item, "stored")
    except InvalidAnswer:
        return False
    return True


def write_questions(asking: Asking, prompts: Sequence[Prompt], path: Path
                    ) -> list[dict[str, Any]]:
    """One line per prompt, its questions stored or asked for, written to ``path``."""
    lines: list[dict[str, Any]] = []
    pending: list[tuple[dict[str, Any], Prompt, Slot]] = []
    for prompt in prompts:
        line: dict[str, Any] = {"id": prompt.id, "category": prompt.category,
                                "index": prompt.index, "prompt": prompt.prompt,
                                "generator": asking.model}
        lines.append(line)
        slot = asking.store.slot(asking.key("tempviz vqa-questions",
                                            generator_text(prompt.prompt)))
        stored = slot.stored(_questions_usable)
        if stored is None:
            pending.append((line, prompt, slot))
        else:  # as a fresh answer is written: the store keeps its keys sorted
            line["questions"] = [question_from(q, "stored").as_dict()
                                 for q in asking.tally.reuse(stored)]
    if pending:
        asker = asking.make()

        def call(prompt: Prompt) -> Reply:
            questions, content, cost = generate_questions(asker, prompt.prompt)
            return [q.as_dict() for q in questions], content, cost

        def one(task: tuple[dict[str, Any], Prompt, Slot]) -> None:
            line, prompt, slot = task
            about = {"id": prompt.id, "prompt": prompt.prompt, "generator": asking.model}
            try:
                line["questions"] = asking.tally.ask(slot, lambda: call(prompt), about)
            except JudgeError as exc:
                asking.tally.fail()
                line["error"] = str(exc)

        with ThreadPoolExecutor(max_workers=max(1, asking.concurrency)) as pool:
            list(pool.map(one, pending))
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


def _reply_usable(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


@dataclass
class _Image:
    """One image's questions: the replies stored or had so far, the slots of the others."""

    image: TempvizImage
    asked: list[Question]
    digest: str = ""
    replies: dict[int, str] = field(default_factory=dict)
    missing: dict[int, Slot] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def _look_up(asking: Asking, item: _Image) -> None:
    try:
        item.digest = image_digest(item.image.path)
    except OSError as exc:
        asking.tally.fail(len(item.asked))
        item.errors.append(str(exc))
        return
    for n, question in enumerate(item.asked):
        slot = asking.store.slot(asking.key("tempviz vqa-answer", ask_text(question),
                                            image_sha256=item.digest), item.image.path)
        stored = slot.stored(_reply_usable)
        if stored is None:
            item.missing[n] = slot
        else:
            item.replies[n] = asking.tally.reuse(stored)


def _ask_missing(asking: Asking, asker: TextAsker, item: _Image) -> None:
    try:
        url = image_url(item.image.path, item.digest)
    except (JudgeError, OSError) as exc:
        asking.tally.fail(len(item.missing))
        item.errors.append(str(exc))
        return

    def call(question: Question) -> Reply:
        reply, cost = answer_question(asker, question, url)
        return reply, reply, cost

    for n, slot in item.missing.items():
        question = item.asked[n]
        about = {"id": item.image.id, "model": item.image.model,
                 "image_sha256": item.digest, "answerer": asking.model,
                 "question": ask_text(question)}
        try:
            item.replies[n] = asking.tally.ask(slot, functools.partial(call, question), about)
        except (JudgeError, OSError) as exc:
            asking.tally.fail()
            item.errors.append(str(exc))


def _scored(item: _Image) -> tuple[dict[str, str], list[dict[str, Any]]]:
    image, asked = item.image, item.asked
    row = {"model": image.model, "id": image.id, "category": image.category,
           "index": image.index, "questions": str(len(asked)), "correct": "",
           "fraction": "", "error": ""}
    if item.errors:
        failed = len(asked) - len(item.replies)
        error = item.errors[0] if len(item.errors) == 1 else \
            f"{failed} of {len(asked)} questions without an answer: {item.errors[0]}"
        return {**row, "error": error}, []
    replies = [item.replies[n] for n in range(len(asked))]
    correct, fraction = score(asked, replies)
    details = [{"model": image.model, "id": image.id, **q.as_dict(), "reply": r,
                "correct": matches(q, r)} for q, r in zip(asked, replies, strict=True)]
    return {**row, "correct": str(correct), "fraction": f"{fraction:.6f}"}, details


def answer_images(asking: Asking, images: Sequence[TempvizImage],
                  questions: Mapping[str, list[Question]]
                  ) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """A score row per image that has questions, and every reply with its verdict; stored
    replies are reused, the others asked for (an image at a time, its questions in turn)."""
    items = [_Image(i, questions[i.id]) for i in images if i.id in questions]
    for item in items:
        _look_up(asking, item)
    pending = [item for item in items if item.missing and not item.errors]
    if pending:
        asker = asking.make()
        with ThreadPoolExecutor(max_workers=max(1, asking.concurrency)) as pool:
            list(pool.map(lambda item: _ask_missing(asking, asker, item), pending))
    results = [_scored(item) for item in items]
    return [r for r, _ in results], [d for _, ds in results for d in ds]
