"""The TempViz suite on the item engine (``engine/suite.py``): what a TempViz item asks the
model for (one picture of its prompt), how it is judged (three yes/no questions) and what its
record holds.

Images and answers are stored under content-addressed keys, as in the ImageTime suite, so a
second run with the same inputs generates nothing and asks nothing. A model or judge failure
raises ItemError with the reason: the item is an error, never a "no".

Layout under the output directory::

    <model>/tempviz/images/<category>-<index>.png   (+ .json, its generation record)
    <model>/tempviz/<judge>/judgments/<category>-<index>.json
    <model>/tempviz/<judge>/report.json, answers.csv
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image

from .. import __version__
from ..engine.item_error import ItemError
from ..engine.runner import case_seed, now
from ..engine.suite import Suite
from ..judges.vlm import image_data_url
from ..models.base import Generated, GenerationRequest, ImageModel, ModelError
from ..rubric.judgment import JudgeError
from ..store.judgments import store_judgment
from ..store.keys import input_key
from ..store.paths import RunPaths, dir_slug
from ..store.resume import reusable_image, reusable_judgment, reusable_sheet
from ..store.sheets import store_image
from .judge import Answer, Answers, TempvizJudge
from .prompts import QUESTIONS, Prompt
from .record import TempvizRecord

if TYPE_CHECKING:
    from typing_extensions import TypeIs

IMAGE_FORMAT = "imagetime-tempviz-image/1"
JUDGMENT_FORMAT = "imagetime-tempviz-judgment/1"
SUITE_DIR = "tempviz"


def run_paths(out: Path, model: str, judge: str) -> RunPaths:
    """``<out>/<model>/tempviz/``: images beside the ImageTime sheets of the same model,
    never mixed with them."""
    return RunPaths(out / dir_slug(model), SUITE_DIR, judge, "prompt-only")


@dataclass(frozen=True)
class TempvizRun:
    """One model x judge of a session, with what every item of it shares."""

    model: ImageModel
    judge: TempvizJudge
    paths: RunPaths
    size: int
    seed: int
    regenerate: bool = False
    rejudge: bool = False
    batch_size: int = 1  # one picture per backend call
    judged: bool = True  # every TempViz item is judged

    def base_record(self, prompt: Prompt) -> TempvizRecord:
        return TempvizRecord(
            key=f"{prompt.id}[{self.model.name}]", id=prompt.id, category=prompt.category,
            index=prompt.index, promptcategory=prompt.promptcategory,
            difficulty=prompt.difficulty, prompt=prompt.prompt, model=self.model.name,
            judge=self.judge.name, run_dir=str(self.paths.run_dir),
            image=str(self.paths.image(prompt.id)), judge_model=self.judge.model)


@dataclass(frozen=True)
class Outcome:
    record: TempvizRecord
    answers: Mapping[str, Answer]


@dataclass(frozen=True)
class StoredImage:
    """An item's picture as the store holds it, ready to judge."""

    image: Image.Image
    sha256: str
    generated: bool
    seconds: float | None


@dataclass(frozen=True)
class DrawnImage:
    """A picture the backend has just drawn, not yet stored."""

    prompt: Prompt
    request: GenerationRequest
    key: str
    generated: Generated
    seconds: float


def _failure_text(exc: BaseException) -> str:
    if isinstance(exc, (ModelError, JudgeError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def generation_request(run: TempvizRun, prompt: Prompt) -> GenerationRequest:
    # One picture, not a sheet: backends draw a single image for the "reference" kind.
    return GenerationRequest(case=prompt.as_case(), setting="prompt-only", size=run.size,
                             seed=case_seed(run.seed, prompt.id), prompt=prompt.prompt,
                             kind="reference")


def image_key(run: TempvizRun, request: GenerationRequest) -> str:
    token_of = getattr(run.model, "input_token", None)
    return input_key({
        "suite": SUITE_DIR, "model": run.model.name, "config": dict(run.model.config()),
        "id": request.case.id, "prompt_sha256": hashlib.sha256(request.text.encode()).hexdigest(),
        "size": request.size, "seed": request.seed, "kind": request.kind,
        "token": token_of(request) if callable(token_of) else None})


def stored_image(run: TempvizRun, prompt: Prompt) -> StoredImage | None:
    """The item's stored picture when its inputs are unchanged and it decodes; else None."""
    key = image_key(run, generation_request(run, prompt))
    stored = reusable_image(run.paths, prompt.id, key, regenerate=run.regenerate)
    if stored is None:
        return None
    return StoredImage(stored[0], stored[1], False, stored[2].get("seconds"))


def draw_image(run: TempvizRun, prompt: Prompt) -> StoredImage | DrawnImage | ItemError:
    """The stored picture, else one the backend draws now; its failure as ItemError."""
    found = stored_image(run, prompt)
    if found is not None:
        return found
    request = generation_request(run, prompt)
    started = time.perf_counter()
    try:
        generated = run.model.generate(request=request)
    except Exception as exc:
        error = ItemError(f"model {run.model.name} failed on {prompt.id}: {_failure_text(exc)}")
        error.__cause__ = exc
        return error
    return DrawnImage(prompt, request, image_key(run, request), generated,
                      round(time.perf_counter() - started, 6))


def store_drawn_image(run: TempvizRun, drawn: DrawnImage) -> StoredImage:
    """Write a drawn picture and its generation record."""
    prompt, image = drawn.prompt, drawn.generated.image.convert("RGB")
    digest = store_image(run.paths, prompt.id, image, {
        "format": IMAGE_FORMAT, "input_key": drawn.key, "model": run.model.name,
        "model_config": dict(run.model.config()), "id": prompt.id, "prompt": prompt.prompt,
        "size": run.size, "seed": drawn.request.seed, "seconds": drawn.seconds, "date": now(),
        "width": image.width, "height": image.height,
        "details": dict(drawn.generated.details), "plugin_version": __version__})
    return StoredImage(image, digest, True, drawn.seconds)


def judgment_key(run: TempvizRun, prompt: Prompt, image_sha256: str) -> str:
    return input_key({"judge": dict(run.judge.config()), "image_sha256": image_sha256,
                      "prompt_sha256": prompt.prompt_sha256,
                      "questions": dict(prompt.questions), "facts": list(prompt.facts),
                      "expected": list(prompt.expected)})


def _answers_of_record(record: Mapping[str, Any]) -> Answers | None:
    """The answers of a stored judgment; None when it is damaged (then asked again)."""
    try:
        answers = {q: Answer(str(a["answer"]), a.get("analysis"), str(a["content"]),
                             int(a["attempts"]))
                   for q, a in ((q, record["answers"][q]) for q in QUESTIONS)}
        if any(a.answer not in ("yes", "no") for a in answers.values()):
            return None
        return Answers(answers, str(record["judge_model"]), int(record["tokens_in"]),
                       int(record["tokens_out"]), float(record["cost_usd"]),
                       float(record["latency_s"]))
    except (KeyError, TypeError, ValueError):
        return None


def stored_outcome_exists(run: TempvizRun, prompt: Prompt) -> bool:
    """Whether a run would reuse the item's image and answers (for dry runs)."""
    request = generation_request(run, prompt)
    stored = reusable_sheet(run.paths, prompt.id, image_key(run, request),  # not decoded
                            regenerate=run.regenerate)
    if stored is None:
        return False
    record = reusable_judgment(run.paths, prompt.id, judgment_key(run, prompt, stored.sha256),
                               rejudge=run.rejudge)
    return record is not None and _answers_of_record(record) is not None


def stored_answers(run: TempvizRun, prompt: Prompt, image: StoredImage) -> Answers | None:
    """The answers stored for this picture and these questions; None when they are asked."""
    record = reusable_judgment(run.paths, prompt.id, judgment_key(run, prompt, image.sha256),
                               rejudge=run.rejudge)
    return None if record is None else _answers_of_record(record)


def ask_and_store_answers(run: TempvizRun, prompt: Prompt, image: StoredImage) -> Answers:
    """Ask the judge the item's three questions and store its answers; raises ItemError."""
    url = image_data_url(image.image, run.paths.image(prompt.id))
    try:
        answers = run.judge.answer(prompt, url)
    except Exception as exc:
        raise ItemError(f"judge {run.judge.model} failed on {prompt.id}: "
                        f"{_failure_text(exc)}") from exc
    store_judgment(run.paths, prompt.id, {
        "format": JUDGMENT_FORMAT, "input_key": judgment_key(run, prompt, image.sha256),
        "id": prompt.id, "judge_config": dict(run.judge.config()), "image_sha256": image.sha256,
        "prompt_sha256": prompt.prompt_sha256, "judge_model": answers.judge_model,
        "answers": {q: dataclasses.asdict(a) for q, a in answers.answers.items()},
        "tokens_in": answers.tokens_in, "tokens_out": answers.tokens_out,
        "cost_usd": answers.cost_usd, "latency_s": answers.latency_s, "date": now(),
        "plugin_version": __version__})
    return answers


def answered_outcome(run: TempvizRun, prompt: Prompt, base: TempvizRecord, image: StoredImage,
                     answers: Answers, judged: bool) -> Outcome:
    """The item's record with its picture's and its answers' facts."""
    record = dataclasses.replace(
        base, image_sha256=image.sha256,
        judgment=str(run.paths.judgment(prompt.id)), judge_model=answers.judge_model,
        cost_usd=answers.cost_usd, tokens_in=answers.tokens_in, tokens_out=answers.tokens_out,
        generation_s=image.seconds, judge_s=answers.latency_s, generated=image.generated,
        judged=judged, **{q: a.answer for q, a in answers.answers.items()})
    return Outcome(record, answers.answers)


class TempvizSuite(Suite[TempvizRun, Prompt, TempvizRecord, StoredImage, DrawnImage, Outcome]):
    """The TempViz suite's stages on the item engine."""

    def lookup(self, run: TempvizRun, item: Prompt) -> StoredImage | None:
        return stored_image(run, item)

    def draw(self, run: TempvizRun, items: Sequence[Prompt]
             ) -> Sequence[StoredImage | DrawnImage | ItemError]:
        return [draw_image(run, prompt) for prompt in items]

    def is_drawn(self, drawing: StoredImage | DrawnImage) -> TypeIs[DrawnImage]:
        return isinstance(drawing, DrawnImage)

    def store(self, run: TempvizRun, drawn: DrawnImage) -> StoredImage:
        return store_drawn_image(run, drawn)

    def reuse(self, run: TempvizRun, item: Prompt, base: TempvizRecord, stored: StoredImage
              ) -> Outcome | None:
        answers = stored_answers(run, item, stored)
        return None if answers is None else answered_outcome(run, item, base, stored, answers,
                                                             False)

    def judge(self, run: TempvizRun, item: Prompt, base: TempvizRecord, stored: StoredImage
              ) -> Outcome:
        reused = self.reuse(run, item, base, stored)
        if reused is not None:
            return reused
        answers = ask_and_store_answers(run, item, stored)
        return answered_outcome(run, item, base, stored, answers, True)

    def spent_usd(self, outcome: Outcome) -> float:
        return outcome.record.cost_usd if outcome.record.judged else 0.0
