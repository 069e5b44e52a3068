"""The TempViz judge: three yes/no questions per image, asked one at a time.

Two prompting styles, as in the TempViz paper:

- ``simple``: the table's own question (``annotation_prompt_*``), answered with a bare
  ``yes`` or ``no``; anything else is asked again.
- ``instructed``: an assessor prompt with a rubric for the criterion (for Q3 the row's
  temporal facts and the expected appearance), answered with ``Analysis: ...`` and then
  ``Rating: Accept`` or ``Rating: Not accept``.

Either style is zero-shot, or k-shot with the user's examples as earlier turns of the chat,
each with its image. Answers are plain text, so any OpenAI-compatible server works.
A transport failure (after its retries) or an answer still unusable after the re-asks raises
JudgeError: the item becomes an error with the reason, never a "no".
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..backends.openai_client import InvalidAnswer, message_text, usage_tokens
from ..backends.prices import cost_usd
from ..judges.ask import JsonAsker, short
from ..judges.base import JudgeOptions
from ..rubric.judgment import JudgeError
from ..store.paths import dir_slug
from .examples import Example, Examples
from .names import STYLES
from .prompts import QUESTION_NAMES, QUESTIONS, Prompt

PROMPT_VERSION = "tempviz-judge/1"
REPLY_SUFFIX = "Just reply with 'yes' or 'no'."
KEY_HINT = ("or --imagetime-judge-key-env=NAME for another variable, 'none' for a server "
            "without keys")

ASSESSOR = """\
You assess images made by a text-to-image model. You get the prompt the image was made \
from, one criterion with its rubric, and the image. Look at the image closely, write a short \
analysis of how well it meets the criterion, then rate it. Rate only this criterion.

Answer in exactly this format, nothing before or after:
Analysis: <your analysis>
Rating: Accept

or, when the image does not meet the criterion:
Analysis: <your analysis>
Rating: Not accept"""

RUBRICS: Mapping[str, str] = {
    "q1": "Accept when the image shows no visible generation errors: no distorted, "
          "duplicated or missing body parts, no objects melting into each other, no garbled "
          "text or symbols, no broken geometry or obvious artefacts. Neither the style nor "
          "how well the image fits the prompt counts here.",
    "q2": "Accept when the subject named in the criterion is present and recognisable in the "
          "image, whatever its age, state or time. Judge presence only.",
}
TEMPORAL_RUBRICS: Mapping[str, str] = {
    "Animals": "Accept when the animal's apparent age matches the age asked for, given its "
               "lifespan: a young animal for a young age, an adult in its prime at about half "
               "its lifespan, signs of old age near the end of it, and no living animal "
               "(remains, a skeleton, a grave) for an age far beyond it.",
    "Artworks": "Accept when the style, technique, materials and subjects of the artwork are "
                "those of Western art in the year or period asked for.",
    "Buildings": "Accept when the building is shown as it was on the date asked for: standing "
                 "before its demolition date; after it, in the state it is in today "
                 "(demolished, in ruins, rebuilt or replaced).",
    "Landscapes": "Accept when the season, weather, vegetation and light match the month, "
                  "date, season or time of day asked for, in Europe.",
    "Maps": "Accept when the map shows the region with the borders and states of the year "
            "asked for.",
}
RATING = re.compile(r"^[\s*_#>-]*rating[\s*_]*:[\s*_]*(accept|not accept)[\s*_.!]*$",
                    re.IGNORECASE | re.MULTILINE)
ANALYSIS = re.compile(r"^[\s*_#>-]*analysis[\s*_]*:[\s*_]*", re.IGNORECASE)


@dataclass(frozen=True)
class Answer:
    answer: str  # yes or no
    analysis: str | None  # the instructed style's analysis
    content: str  # the raw reply
    attempts: int


@dataclass(frozen=True)
class Answers:
    """One image's three answers with what asking them cost."""

    answers: Mapping[str, Answer]
    judge_model: str
    tokens_in: int
    tokens_out: int
    cost_usd: float
    latency_s: float


def question_text(prompt: Prompt, question: str) -> str:
    """The table's question without its reply instruction (the instructed style adds its
    own)."""
    text = prompt.questions[question].strip()
    return text[: -len(REPLY_SUFFIX)].rstrip() if text.endswith(REPLY_SUFFIX) else text


def instructed_text(prompt: Prompt, question: str) -> str:
    name = QUESTION_NAMES[question]
    lines = [f"Prompt: '{prompt.prompt}'", "",
             f"Criterion ({question.upper()}, {name}): {question_text(prompt, question)}",
             f"Rubric: {RUBRICS.get(question) or TEMPORAL_RUBRICS[prompt.category]}"]
    if question == "q3":
        lines += ["", "Temporal elements to check:"]
        lines += [f"- {label}: {value}" for label, value in prompt.facts]
        if prompt.expected:
            when = " after the demolition" if prompt.category == "Buildings" else ""
            lines.append(f"- what the image should show{when}: {', '.join(prompt.expected)}")
        if not prompt.facts and not prompt.expected:
            lines.append("- the time named in the prompt")
    return "\n".join(lines)


def parse_simple(content: str) -> tuple[str, str | None]:
    word = content.strip().strip("\"'`").rstrip(".!").strip().lower()
    if word not in ("yes", "no"):
        raise InvalidAnswer(f"expected 'yes' or 'no', got {short(content)!r}")
    return word, None


def parse_instructed(content: str) -> tuple[str, str | None]:
    ratings = list(RATING.finditer(content))
    if len(ratings) != 1:
        found = "no" if not ratings else f"{len(ratings)}"
        raise InvalidAnswer(f"expected one line 'Rating: Accept' or 'Rating: Not accept', "
                            f"found {found}: {short(content)!r}")
    analysis = ANALYSIS.sub("", content[: ratings[0].start()].strip(), count=1).strip()
    if not analysis:
        raise InvalidAnswer(f"expected an analysis before the rating: {short(content)!r}")
    return ("yes" if ratings[0].group(1).lower() == "accept" else "no"), analysis


class TextAsker(JsonAsker):
    """The probe's asker (its endpoint, redaction and prices) for plain-text answers."""

    def ask_text(self, messages: list[dict[str, Any]],
                 parse: Callable[[str], tuple[str, str | None]]
                 ) -> tuple[Answer, int, int]:
        problems: list[str] = []
        tokens_in = tokens_out = 0
        for attempt in range(1, self.options.reasks + 2):
            try:
                response = self._call(messages, {"type": "text"})
                used_in, used_out, _cached = usage_tokens(response)
                tokens_in += used_in
                tokens_out += used_out
                content = message_text(response)
                answer, analysis = parse(content)
            except InvalidAnswer as exc:
                problems.append(self.redact(str(exc)))
                continue
            return Answer(answer, analysis, content, attempt), tokens_in, tokens_out
        raise JudgeError(f"no valid answer after {len(problems)} attempts: "
                         + " | ".join(problems))


class TempvizJudge:
    """Asks Q1, Q2 and Q3 about one image; thread-safe (one pooled client)."""

    cpu_bound = False  # it waits on a server: its calls overlap in the engine's judge pool

    def __init__(self, options: JudgeOptions, style: str = "simple",
                 examples: Examples | None = None, model: str | None = None) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown style {style!r}; use {' or '.join(STYLES)}")
        if model:
            options = dataclasses.replace(options, model=model)
        self.options = options
        self.style = style
        self.examples = examples
        self._asker = TextAsker(options, who="the TempViz judge", key_hint=KEY_HINT)
        self._parse = parse_instructed if style == "instructed" else parse_simple

    @property
    def model(self) -> str:
        return self.options.model

    @property
    def shots(self) -> int:
        return 0 if self.examples is None else self.examples.k

    @property
    def name(self) -> str:
        """The run directory's name: judge model, style and shots."""
        return dir_slug(f"{self.model}-{self.style}-{self.shots}shot")

    def config(self) -> Mapping[str, Any]:
        """Everything that changes an answer; a change asks the questions again."""
        price = self._asker.price
        return {"judge": "tempviz-vlm", "judge_model": self.model, "style": self.style,
                "shots": self.shots, "prompt_version": PROMPT_VERSION,
                "base_url": self._asker.base_url, "params": dict(self.options.params),
                "examples_sha256": None if self.examples is None else self.examples.sha256,
                "price_usd_per_mtok": price.per_mtok() if price else None}

    @property
    def priced(self) -> bool:
        return self._asker.price is not None

    def _turn(self, prompt: Prompt, question: str, image_url: str) -> dict[str, Any]:
        text = (instructed_text(prompt, question) if self.style == "instructed"
                else prompt.questions[question])
        return {"role": "user", "content": [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": image_url}}]}

    def _example_turns(self, example: Example) -> list[dict[str, Any]]:
        if self.style == "instructed":
            rating = "Accept" if example.answer == "yes" else "Not accept"
            reply = f"Analysis: {example.analysis}\nRating: {rating}"
        else:
            reply = example.answer
        return [self._turn(example.prompt, example.question, example.data_url),
                {"role": "assistant", "content": reply}]

    def messages(self, prompt: Prompt, question: str, image_url: str) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        if self.style == "instructed":
            messages.append({"role": "system", "content": ASSESSOR})
        if self.examples is not None:
            for example in self.examples.shown(prompt.category, question):
                messages += self._example_turns(example)
        messages.append(self._turn(prompt, question, image_url))
        return messages

    def answer(self, prompt: Prompt, image_url: str) -> Answers:
        """The three answers; JudgeError naming the question that could not be answered."""
        started = time.perf_counter()
        answers: dict[str, Answer] = {}
        tokens_in = tokens_out = 0
        for question in QUESTIONS:
            try:
                answer, used_in, used_out = self._asker.ask_text(
                    self.messages(prompt, question, image_url), self._parse)
            except JudgeError as exc:
                raise JudgeError(f"{question.upper()} ({QUESTION_NAMES[question]}): {exc}"
                                 ) from None
            answers[question] = answer
            tokens_in += used_in
            tokens_out += used_out
        return Answers(answers, self.model, tokens_in, tokens_out,
                       cost_usd(self._asker.price, tokens_in, tokens_out),
                       round(time.perf_counter() - started, 3))


# ---------------------------------------------------------------- the paper's one-question judge

# The TempViz paper's "Judging" prompt (Appendix D.1), in the style of Prometheus-Vision: one
# whole-prompt assessment, analysis then rating, the prompt inserted at the end.
PAPER_ASSESSOR = """\
You are a professional text-to-image quality assessor. Your task is to judge how accurately \
the image reflects the given prompt, including the attributes of the objects and all \
temporal elements of the prompt, such as signs of aging in animals, historical borders on \
maps, seasonal indicators in landscapes, light and shadow for the time of day, architectural \
changes of buildings over time, and the stylistic traits of an epoch in artworks.

Analyse the image step by step, then rate it on a two-point scale:
- Not accept: the prompt, including its temporal elements, is not accurately reflected.
- Accept: the prompt, including its temporal elements, is accurately reflected.

Do not write any other text. Answer in exactly this format:
ANALYSIS: <your step-by-step analysis>
RATING: <Not accept or Accept>

Prompt: {prompt}"""
# The paper's "Standard" question (Appendix D.1); the tables' annotation_prompt_2 is this
# question filled in for every row.
PAPER_SIMPLE = ("Is the image correct for the following prompt: '{prompt}'? Is the correct "
                "temporal knowledge applied (i.e. {cue})? Just reply with 'yes' or 'no'.")
WHOLE_PROMPT_VERSION = "tempviz-whole-prompt/1"


@dataclass(frozen=True)
class Exemplar:
    """A k-shot exemplar of the whole-prompt judge: an image with its prompt and verdict."""

    prompt: str
    cue: str  # the temporal cue named by the simple question
    answer: str  # yes or no
    analysis: str
    image_url: str
    category: str  # a TempViz category, or "" for an image from outside TempViz


def whole_prompt_text(style: str, prompt: str, cue: str = "", question: str = "") -> str:
    """The one question: the row's own whole-prompt question (``question``) or the paper's
    template filled in (simple), or the assessor prompt (instructed)."""
    if style == "instructed":
        return PAPER_ASSESSOR.format(prompt=prompt)
    return question or PAPER_SIMPLE.format(prompt=prompt, cue=cue or "the time in the prompt")


def out_of_distribution(exemplars: tuple[Exemplar, ...], category: str,
                        shots: int) -> tuple[Exemplar, ...]:
    """The first ``shots`` exemplars, in file order, that are not of the item's category:
    an item never sees an exemplar of its own category."""
    chosen = tuple(e for e in exemplars if e.category != category)[:shots]
    if len(chosen) < shots:
        raise ValueError(f"{shots} shots asked for but only {len(chosen)} exemplars are "
                         f"outside the category {category}")
    return chosen


class WholePromptJudge:
    """The paper's judge: ONE question per image about the whole prompt (subject and time),
    answered yes/no (simple) or ANALYSIS / RATING: Accept / Not accept (instructed), zero-shot
    or with out-of-distribution exemplars as earlier turns."""

    def __init__(self, options: JudgeOptions, style: str = "simple",
                 exemplars: tuple[Exemplar, ...] = (), shots: int = 0) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown style {style!r}; use {' or '.join(STYLES)}")
        if shots and style == "instructed" and any(not e.analysis for e in exemplars):
            raise ValueError("the instructed style shows each exemplar's analysis: an "
                             "exemplar has none")
        self.options = options
        self.style = style
        self.exemplars = exemplars
        self.shots = shots
        self._asker = TextAsker(options, who="the TempViz judge", key_hint=KEY_HINT)
        self._parse = parse_instructed if style == "instructed" else parse_simple

    @property
    def name(self) -> str:
        return dir_slug(f"{self.options.model}-whole-prompt-{self.style}-{self.shots}shot")

    def _reply(self, exemplar: Exemplar) -> str:
        if self.style == "instructed":
            rating = "Accept" if exemplar.answer == "yes" else "Not accept"
            return f"ANALYSIS: {exemplar.analysis}\nRATING: {rating}"
        return exemplar.answer

    def messages(self, prompt: Prompt, image_url: str) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        for exemplar in out_of_distribution(self.exemplars, prompt.category, self.shots):
            text = whole_prompt_text(self.style, exemplar.prompt, exemplar.cue)
            messages += [{"role": "user", "content": [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": exemplar.image_url}}]},
                {"role": "assistant", "content": self._reply(exemplar)}]
        text = whole_prompt_text(self.style, prompt.prompt, question=prompt.questions["q3"])
        messages.append({"role": "user", "content": [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": image_url}}]})
        return messages

    def answer(self, prompt: Prompt, image_url: str) -> tuple[Answer, float]:
        """The one answer and its cost in USD; JudgeError when none could be had."""
        answer, tokens_in, tokens_out = self._asker.ask_text(
            self.messages(prompt, image_url), self._parse)
        return answer, cost_usd(self._asker.price, tokens_in, tokens_out)
