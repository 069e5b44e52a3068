"""One TempViz item, start to finish: draw the image (or reuse it), ask the three questions
(or reuse the answers).

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
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from .. import __version__
from ..engine.item_error import ItemError
from ..engine.pipeline import CostBudget
from ..engine.runner import case_seed, now
from ..judges.vlm import image_data_url
from ..models.base import GenerationRequest, ImageModel, ModelError
from ..rubric.judgment import JudgeError
from ..store.run_dir import (
    RunPaths,
    dir_slug,
    find_stored_sheet,
    input_key,
    load_stored_image,
    load_stored_judgment,
    store_image,
    store_judgment,
)
from .judge import Answer, Answers, TempvizJudge
from .prompts import QUESTIONS, Prompt
from .record import TempvizRecord

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
    budget: CostBudget = field(default_factory=lambda: CostBudget(None))
    # Backends are called one request at a time unless they say they take more (hosted APIs).
    drawing: threading.Lock = field(default_factory=threading.Lock, compare=False)

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
class _Image:
    image: Image.Image
    sha256: str
    generated: bool
    seconds: float | None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, (ModelError, JudgeError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def generation_request(run: TempvizRun, prompt: Prompt) -> GenerationRequest:
    # One picture, not a sheet: backends draw a single image for the "reference" kind.
    return GenerationRequest(case=prompt.as_case(), setting="prompt-only", size=run.size,
                             seed=case_seed(run.seed, prompt.id), prompt=prompt.prompt,
                             kind="reference")


def image_key(run: TempvizRun, request: GenerationRequest) -> str:
    return input_key({
        "suite": SUITE_DIR, "model": run.model.name, "config": dict(run.model.config()),
        "id": request.case.id, "prompt_sha256": hashlib.sha256(request.text.encode()).hexdigest(),
        "size": request.size, "seed": request.seed, "kind": request.kind,
        "token": run.model.input_token(request=request)})


def obtain_image(run: TempvizRun, prompt: Prompt) -> _Image:
    request = generation_request(run, prompt)
    key = image_key(run, request)
    stored = None if run.regenerate else load_stored_image(run.paths, prompt.id, key)
    if stored is not None:
        return _Image(stored[0], stored[1], False, stored[2].get("seconds"))
    concurrent = run.model.concurrency > 1
    started = time.perf_counter()
    try:
        if concurrent:
            generated = run.model.generate(request=request)
        else:
            with run.drawing:
                started = time.perf_counter()
                generated = run.model.generate(request=request)
    except Exception as exc:
        raise ItemError(f"model {run.model.name} failed on {prompt.id}: "
                        f"{_describe(exc)}") from exc
    seconds = round(time.perf_counter() - started, 6)
    image = generated.image.convert("RGB")
    digest = store_image(run.paths, prompt.id, image, {
        "format": IMAGE_FORMAT, "input_key": key, "model": run.model.name,
        "model_config": dict(run.model.config()), "id": prompt.id, "prompt": prompt.prompt,
        "size": run.size, "seed": request.seed, "seconds": seconds, "date": now(),
        "width": image.width, "height": image.height, "details": dict(generated.details),
        "plugin_version": __version__})
    return _Image(image, digest, True, seconds)


def judgment_key(run: TempvizRun, prompt: Prompt, image_sha256: str) -> str:
    return input_key({"judge": dict(run.judge.config()), "image_sha256": image_sha256,
                      "prompt_sha256": prompt.prompt_sha256,
                      "questions": dict(prompt.questions), "facts": list(prompt.facts),
                      "expected": list(prompt.expected)})


def _stored_answers(record: Mapping[str, Any]) -> Answers | None:
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
    """Whether the item's image and answers are both stored and current (for dry runs)."""
    request = generation_request(run, prompt)
    stored = find_stored_sheet(run.paths, prompt.id, image_key(run, request))  # not decoded
    if stored is None:
        return False
    record = load_stored_judgment(run.paths, prompt.id,
                                  judgment_key(run, prompt, stored.sha256))
    return record is not None and _stored_answers(record) is not None


def obtain_answers(run: TempvizRun, prompt: Prompt, image: _Image) -> tuple[Answers, bool]:
    key = judgment_key(run, prompt, image.sha256)
    if not run.rejudge:
        record = load_stored_judgment(run.paths, prompt.id, key)
        answers = None if record is None else _stored_answers(record)
        if answers is not None:
            return answers, False
    run.budget.check()
    url = image_data_url(image.image, run.paths.image(prompt.id))
    try:
        answers = run.judge.answer(prompt, url)
    except Exception as exc:
        raise ItemError(f"judge {run.judge.model} failed on {prompt.id}: "
                        f"{_describe(exc)}") from exc
    run.budget.add(answers.cost_usd)
    store_judgment(run.paths, prompt.id, {
        "format": JUDGMENT_FORMAT, "input_key": key, "id": prompt.id,
        "judge_config": dict(run.judge.config()), "image_sha256": image.sha256,
        "prompt_sha256": prompt.prompt_sha256, "judge_model": answers.judge_model,
        "answers": {q: dataclasses.asdict(a) for q, a in answers.answers.items()},
        "tokens_in": answers.tokens_in, "tokens_out": answers.tokens_out,
        "cost_usd": answers.cost_usd, "latency_s": answers.latency_s, "date": now(),
        "plugin_version": __version__})
    return answers, True


def run_item(run: TempvizRun, prompt: Prompt) -> Outcome:
    """Everything an item does before its assertion; raises ItemError."""
    image = obtain_image(run, prompt)
    answers, judged = obtain_answers(run, prompt, image)
    record = dataclasses.replace(
        run.base_record(prompt), image_sha256=image.sha256,
        judgment=str(run.paths.judgment(prompt.id)), judge_model=answers.judge_model,
        cost_usd=answers.cost_usd, tokens_in=answers.tokens_in, tokens_out=answers.tokens_out,
        generation_s=image.seconds, judge_s=answers.latency_s, generated=image.generated,
        judged=judged, **{q: a.answer for q, a in answers.answers.items()})
    return Outcome(record, answers.answers)
