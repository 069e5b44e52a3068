"""Decompositional VQA (TIFA-style): an LLM turns each prompt into questions with answers, a
VLM answers them about the image, and the share answered correctly is the image's score.

Questions come as JSON from any OpenAI-compatible endpoint, asked in plain-text mode: the
reply must hold an object ``{"questions": [...]}`` (a Markdown code fence around it is
tolerated), each question ``{"element", "category", "kind": "open"|"choice", "question",
"choices": [...], "answer"}``; ``choices`` only for ``choice``, whose ``answer`` is one of them.

Free-form answers are matched by one rule (``matches``): both texts are normalised (lower
case, punctuation removed, the articles a/an/the dropped, spaces collapsed); a multiple-choice
reply is correct when it names the right option by its letter (``B``, ``(B)``, ``B)``,
``Answer: B``) or contains the right option's text and no other option's; an open reply is
correct when it equals the answer, or holds every word of the answer (``a baby aardvark``
for ``baby``), or names the same number.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...backends.openai_client import InvalidAnswer
from ...backends.prices import cost_usd
from ...judges.ask import short
from ...tempviz.judge import TextAsker

ELEMENT_CATEGORIES = ("object", "human", "animal", "food", "activity", "attribute", "counting",
                      "color", "material", "spatial", "location", "shape", "other")
KINDS = ("open", "choice")
LETTERS = string.ascii_uppercase
VQA_VERSION = "tempviz-vqa/1"

GENERATOR = """\
Given an image description, extract the elements of the description and write questions \
that check whether an image shows each of them.

1. List the elements: the main subject, its attributes, the time, place and every other \
detail that the image must show.
2. Tag each element with one of: {categories}.
3. For each element write two questions with their correct answers: an open-ended question, \
and a multiple-choice question with four options of which exactly one is correct.

Example: for "a photo of a pony that is one month old" the element "pony" (animal) gives \
"What is the main subject of the image?" (answer: Pony) and "What is the main subject of the \
image? A) Horse B) Pony C) Donkey D) Zebra" (answer: Pony).

Reply with JSON only, in this form:
{{"questions": [{{"element": "pony", "category": "animal", "kind": "open", \
"question": "What is the main subject of the image?", "answer": "Pony"}}, \
{{"element": "pony", "category": "animal", "kind": "choice", \
"question": "What is the main subject of the image?", \
"choices": ["Horse", "Pony", "Donkey", "Zebra"], "answer": "Pony"}}]}}

Description: {prompt}"""

OPEN_ASK = "{question} Answer in a few words."
CHOICE_ASK = "{question}\n{options}\nReply with the letter of one option."


@dataclass(frozen=True)
class Question:
    element: str
    category: str
    kind: str  # open or choice
    question: str
    answer: str
    choices: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"element": self.element, "category": self.category,
                               "kind": self.kind, "question": self.question,
                               "answer": self.answer}
        if self.choices:
            out["choices"] = list(self.choices)
        return out


def _text(item: Mapping[str, Any], name: str, where: str) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not value.strip():
        raise InvalidAnswer(f"{where}: no text in {name!r}")
    return value.strip()


def question_from(item: object, where: str) -> Question:
    """One question of a generator's reply or a questions file; InvalidAnswer naming it."""
    if not isinstance(item, dict):
        raise InvalidAnswer(f"{where}: not an object")
    kind = _text(item, "kind", where)
    if kind not in KINDS:
        raise InvalidAnswer(f"{where}: kind {kind!r}: use open or choice")
    category = str(item.get("category") or "other")
    answer = _text(item, "answer", where)
    choices: tuple[str, ...] = ()
    if kind == "choice":
        raw = item.get("choices")
        if not isinstance(raw, list) or len(raw) < 2 or len(raw) > len(LETTERS):
            raise InvalidAnswer(f"{where}: a choice question needs a list of options")
        choices = tuple(str(c).strip() for c in raw)
        if answer not in choices:
            raise InvalidAnswer(f"{where}: the answer {answer!r} is not one of its options")
    return Question(str(item.get("element") or ""), category, kind,
                    _text(item, "question", where), answer, choices)


def parse_questions(content: str) -> list[Question]:
    """The generator's reply as questions; InvalidAnswer (asked again) when unusable."""
    text = content.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.DOTALL)
    text = fence.group(1) if fence else text
    try:
        data = json.loads(text)
    except ValueError:
        raise InvalidAnswer(f"not JSON: {short(content)!r}") from None
    items = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(items, list) or not items:
        raise InvalidAnswer(f"expected an object with a non-empty list 'questions': "
                            f"{short(content)!r}")
    return [question_from(item, f"question {n}") for n, item in enumerate(items, start=1)]


def generator_text(prompt: str) -> str:
    """What the LLM is asked for one prompt (the original prompt, opening included)."""
    return GENERATOR.format(categories=", ".join(ELEMENT_CATEGORIES), prompt=prompt)


def generate_questions(asker: TextAsker, prompt: str) -> tuple[list[Question], str, float]:
    """The questions for one prompt from the LLM, its raw reply and the cost in USD (0
    without a price)."""
    found: list[Question] = []

    def parse(content: str) -> tuple[str, str | None]:
        found[:] = parse_questions(content)
        return "ok", None

    answer, tokens_in, tokens_out = asker.ask_text(
        [{"role": "user", "content": generator_text(prompt)}], parse)
    return found, answer.content, cost_usd(asker.price, tokens_in, tokens_out)


def ask_text(question: Question) -> str:
    if question.kind == "choice":
        options = "\n".join(f"{LETTERS[i]}) {c}" for i, c in enumerate(question.choices))
        return CHOICE_ASK.format(question=question.question, options=options)
    return OPEN_ASK.format(question=question.question)


def answer_question(asker: TextAsker, question: Question, image_url: str
                    ) -> tuple[str, float]:
    """The VLM's free-form reply to one question about the image, and its cost in USD (0
    without a price)."""
    def parse(content: str) -> tuple[str, str | None]:
        if not content.strip():
            raise InvalidAnswer("an empty answer")
        return content.strip(), None

    answer, tokens_in, tokens_out = asker.ask_text([{"role": "user", "content": [
        {"type": "text", "text": ask_text(question)},
        {"type": "image_url", "image_url": {"url": image_url}}]}], parse)
    return answer.answer, cost_usd(asker.price, tokens_in, tokens_out)


def normalise(text: str) -> str:
    words = re.sub(r"[^\w\s.]", " ", text.lower()).replace(".", " ").split()
    return " ".join(w for w in words if w not in ("a", "an", "the"))


def _numbers(text: str) -> set[float]:
    return {float(n) for n in re.findall(r"\d+(?:\.\d+)?", text)}


def _letter(reply: str, count: int) -> str | None:
    allowed = LETTERS[:count]
    found = re.match(r"^\s*(?:answer\s*:?\s*)?\(?([A-Za-z])\)?(?:[\s.):,]|$)", reply,
                     re.IGNORECASE)
    letter = found.group(1).upper() if found else None
    return letter if letter is not None and letter in allowed else None


def _contains(words: str, part: str) -> bool:
    return bool(part) and f" {part} " in f" {words} "


def matches(question: Question, reply: str) -> bool:
    """Whether the VLM's reply is the question's answer (the rule in the module docstring)."""
    said = normalise(reply)
    if question.kind == "choice":
        letter = _letter(reply, len(question.choices))
        right = question.choices.index(question.answer)
        if letter is not None:
            return letter == LETTERS[right]
        named = [i for i, c in enumerate(question.choices) if _contains(said, normalise(c))]
        return named == [right]
    expected = normalise(question.answer)
    if said == expected or all(_contains(said, w) for w in expected.split()):
        return True
    numbers = _numbers(question.answer)
    return bool(numbers) and numbers == _numbers(reply)


def score(questions: Sequence[Question], replies: Sequence[str]) -> tuple[int, float]:
    """How many replies match, and their share."""
    correct = sum(matches(q, r) for q, r in zip(questions, replies, strict=True))
    return correct, correct / len(questions) if questions else 0.0
