"""The order probe: can the judge tell which of a sheet's panels comes first, and say why?

For every stored sheet of a run the judge sees five probe images, one request each: panels
t1 and t4 stacked in both orders, t2 and t3 in both orders, and all four panels in a seeded
shuffled grid. Asked for, the free-text aspects add four more (``causality``): t1/t4 and
t2/t3 with the later panel on top, asked why (Reasoning) and what caused it (Inferring), each
answer rated 0-5 by a rater against the case's ground truth. Answers and ratings are cached
under the run, keyed on their inputs, so a re-run asks only what is missing or stale. A
request that fails is an error with its reason, never a wrong answer or a rating of 0.
Metrics and verdicts: ``order_report``.
"""

from __future__ import annotations

import hashlib
import io
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from PIL import Image

from ... import __version__
from ...cases.model import Case
from ...judges.ask import Answer, JsonAsker
from ...judges.ask_text import TextAnswer, ask_text, nonempty_text
from ...judges.vlm import image_data_url
from ...rubric.judgment import JudgeError
from ...store.atomic import atomic_write_json, read_json
from ...store.keys import input_key, sha256_bytes
from ...store.paths import with_setting
from . import causality
from .images import grid_image, pair_image, panels
from .order_metrics import ranks_from_labels

PROBE_VERSION = "imagetime-order-probe/1"
ANSWER_FORMAT = "imagetime-order-probe-answer/1"
RATING_FORMAT = "imagetime-order-probe-rating/1"
CACHE_DIR = "probe-order"
PAIRS: tuple[tuple[int, int], ...] = ((0, 3), (1, 2))  # t1/t4 and t2/t3
LABELS = ("1", "2", "3", "4")
PROBE_NAMES = ("t1-t4", "t1-t4:reversed", "t2-t3", "t2-t3:reversed", "order",
               "t1-t4:reasoning", "t1-t4:inferring", "t2-t3:reasoning", "t2-t3:inferring")

_IGNORE_TEXT = ("Decide from what the pictures show (where things are, their states, how far "
                "the action has gone) and ignore any text, numbers or labels drawn inside the "
                "pictures.")
PAIR_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["first"],
    "properties": {"first": {"type": "string", "enum": ["A", "B"]}}}
ORDER_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["order"],
    "properties": {"order": {"type": "array", "items": {"type": "string", "enum": list(LABELS)}}}}


@dataclass(frozen=True)
class Probe:
    """One probe image of one sheet: a pair (top stage, bottom stage) or the shuffled grid
    (``stages[k]`` is the stage shown in cell k, labelled k + 1); a free-text aspect shows a
    pair, the later stage on top."""

    name: str  # "t1-t4", "t1-t4:reversed", ..., "order", "t1-t4:reasoning", ... (PROBE_NAMES)
    stages: tuple[int, ...]
    aspect: str = "order"  # "order", "reasoning" or "inferring"

    @property
    def kind(self) -> str:
        """What is asked: pair, order (the grid), reasoning or inferring."""
        if self.aspect != "order":
            return self.aspect
        return "order" if len(self.stages) == 4 else "pair"

    @property
    def reversed(self) -> bool:
        return self.kind == "pair" and self.stages[0] > self.stages[1]

    @property
    def group(self) -> str:
        """Both presentations of a pair share it."""
        return self.name.split(":")[0]


def arrangement(seed: int, case_id: str, image_sha256: str) -> tuple[int, ...]:
    """The shuffled grid's cells: seeded per sheet, never the sheet's own order."""
    digest = hashlib.sha256(f"{seed}:{case_id}:{image_sha256}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    cells = list(range(4))
    while cells == sorted(cells):
        rng.shuffle(cells)
    return tuple(cells)


def probes_for(seed: int, case_id: str, image_sha256: str) -> tuple[Probe, ...]:
    out = []
    for early, late in PAIRS:
        name = f"t{early + 1}-t{late + 1}"
        out += [Probe(name, (early, late)), Probe(f"{name}:reversed", (late, early))]
    out.append(Probe("order", arrangement(seed, case_id, image_sha256)))
    return tuple(out)


def text_probes(aspects: Sequence[str]) -> tuple[Probe, ...]:
    """The free-text probes asked for: each pair with its later panel on top, per aspect."""
    return tuple(Probe(f"t{early + 1}-t{late + 1}:{aspect}", (late, early), aspect)
                 for early, late in PAIRS for aspect in causality.TEXT_ASPECTS
                 if aspect in aspects)


def question(probe: Probe, concept: str | None) -> str:
    about = f" (the action: {concept})" if concept else ""
    if probe.kind == "pair":
        return (f"The image shows two pictures from one short sequence of moments{about}: "
                f"picture A on top and picture B below. Which picture shows the earlier "
                f'moment? {_IGNORE_TEXT} Answer with a JSON object: {{"first": "A"}} or '
                f'{{"first": "B"}}.')
    return (f"The image shows four pictures from one short sequence of moments{about}, in "
            f"shuffled positions, labelled 1, 2, 3 and 4 beside them. Put the pictures in time "
            f"order, earliest first. {_IGNORE_TEXT} Answer with a JSON object "
            f'{{"order": [...]}} that lists each of the labels "1", "2", "3", "4" exactly '
            f"once, earliest first.")


def probe_image(sheet: Image.Image, probe: Probe, cover_corner: float) -> Image.Image:
    cut = panels(sheet, cover_corner)
    if len(probe.stages) == 2:
        return pair_image(cut[probe.stages[0]], cut[probe.stages[1]])
    return grid_image([cut[stage] for stage in probe.stages])


def _check_order(value: Any) -> str | None:
    order = value["order"]
    if sorted(order) != list(LABELS):
        return f"the order must list each of 1-4 exactly once, got {order}"
    return None


# ---------------------------------------------------------------- runs and sheets


@dataclass(frozen=True)
class StoredSheet:
    case_id: str
    path: Path
    domain: str
    concept: str | None
    case: Case | None = None  # the free-text aspects' ground truth comes from it


@dataclass(frozen=True)
class ProbedRun:
    """A model's stored sheets (``<out>/<model>/images``)."""

    path: Path
    model: str
    sheets: tuple[StoredSheet, ...]


def model_dirs(paths: Iterable[Path]) -> list[Path]:
    """Model directories from model directories, judge run directories or output folders."""
    found: list[Path] = []
    for path in paths:
        if (path / "images").is_dir():
            found.append(path)
        elif (path.parent / "images").is_dir():
            found.append(path.parent)
        else:
            found.extend(p.parent for p in sorted(path.glob("*/images")) if p.is_dir())
    return list(dict.fromkeys(p.resolve() for p in found))


def load_run(path: Path, cases: Mapping[str, Case], sample: int | None = None,
             seed: int = 0) -> ProbedRun:
    """The run's sheets (a seeded sample of ``sample`` of them when given)."""
    images = sorted((path / "images").glob("*.png"))
    if sample is not None and sample < len(images):
        images = sorted(random.Random(seed).sample(images, sample))
    model = path.name
    sheets = []
    for image in images:
        record = read_json(image.with_suffix(".json"))
        if isinstance(record, dict) and record.get("model"):
            model = with_setting(str(record["model"]), str(record.get("setting",
                                                                      "prompt-only")))
        case = cases.get(image.stem)
        sheets.append(StoredSheet(image.stem, image, case.domain if case else "unknown",
                                  case.concept if case else None, case))
    return ProbedRun(path, model, tuple(sheets))


# ---------------------------------------------------------------- asking, with a cache


@dataclass(frozen=True)
class ProbeSettings:
    judge_model: str
    params: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    cover_corner: float = 0.0
    concurrency: int = 8
    aspects: tuple[str, ...] = ("order",)
    rater_model: str | None = None  # rates the free-text answers; None: the judge model
    rater_params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def rater(self) -> str:
        return self.rater_model or self.judge_model


@dataclass(frozen=True)
class Outcome:
    """One probe of one sheet: its answer (and rating), or the reason there is none."""

    run: str
    model: str
    case_id: str
    domain: str
    probe: Probe
    answer: Any = None  # "A"/"B", the labels in time order, or the free-text answer
    error: str | None = None
    rating: int | None = None  # the rater's 0-5 for a free-text answer
    truth: str | None = None  # the ground truth a free-text answer is rated against
    asked: tuple[str, ...] = ()  # who was asked in this run: "judge", "rater"
    cached: tuple[str, ...] = ()  # whose answers were read from the store
    cost_usd: float = 0.0

    @property
    def ranks(self) -> tuple[int, ...] | None:
        if self.probe.kind != "order" or self.answer is None:
            return None
        return ranks_from_labels(self.answer, self.probe.stages)


@dataclass(frozen=True)
class _Task:
    run: ProbedRun
    sheet: StoredSheet
    image_sha256: str
    probe: Probe
    text: str
    key: str
    truth: str = ""  # the free-text aspects' ground truth

    def cache_path(self, key: str | None = None) -> Path:
        return self.run.path / CACHE_DIR / f"{key or self.key}.json"

    def outcome(self, **values: Any) -> Outcome:
        return Outcome(str(self.run.path), self.run.model, self.sheet.case_id,
                       self.sheet.domain, self.probe, **values)


def _sheet_probes(settings: ProbeSettings, sheet: StoredSheet,
                  image_sha256: str) -> tuple[Probe, ...]:
    order = probes_for(settings.seed, sheet.case_id, image_sha256) \
        if "order" in settings.aspects else ()
    # Without its case a sheet has no ground truth to rate an answer against.
    return order + (text_probes(settings.aspects) if sheet.case is not None else ())


def _stage(index: int) -> str:
    return f"t{index + 1}"


def _tasks(run: ProbedRun, settings: ProbeSettings) -> Iterable[_Task | Outcome]:
    for sheet in run.sheets:
        try:
            digest = sha256_bytes(sheet.path.read_bytes())
        except OSError as exc:
            for probe in _sheet_probes(settings, sheet, ""):
                yield Outcome(str(run.path), run.model, sheet.case_id, sheet.domain, probe,
                              error=f"cannot read {sheet.path}: {exc}")
            continue
        for probe in _sheet_probes(settings, sheet, digest):
            truth = ""
            if probe.aspect == "order":
                text = question(probe, sheet.concept)
            else:
                assert sheet.case is not None  # _sheet_probes asks free text only with a case
                text = causality.question(probe.aspect, sheet.case)
                late, early = probe.stages
                truth = causality.ground_truth(probe.aspect, sheet.case, _stage(early),
                                               _stage(late))
            key = input_key({"probe_version": PROBE_VERSION, "image_sha256": digest,
                             "probe": probe.name, "stages": list(probe.stages),
                             "judge_model": settings.judge_model,
                             "params": dict(settings.params), "question": text,
                             "cover_corner": settings.cover_corner})
            yield _Task(run, sheet, digest, probe, text, key, truth)


def _usable(probe: Probe, answer: Any) -> bool:
    if probe.kind == "pair":
        return answer in ("A", "B")
    if probe.kind == "order":
        return isinstance(answer, list) and sorted(map(str, answer)) == list(LABELS)
    return isinstance(answer, str) and bool(answer.strip())


def _cached(task: _Task) -> Any:
    """The stored answer of this very probe; None when it is missing or damaged."""
    record = read_json(task.cache_path())
    if not isinstance(record, dict) or record.get("key") != task.key \
            or not _usable(task.probe, record.get("answer")):
        return None
    return record["answer"]


def _rating_key(task: _Task, answer: str, settings: ProbeSettings) -> str:
    """Changes with the answer's own key, the rater, its parameters and the prompt (ground
    truth and answer): every answer is rated on its own, as the paper rates each sample."""
    return input_key({"format": RATING_FORMAT, "answer_key": task.key,
                      "rater_model": settings.rater,
                      "params": dict(settings.rater_params),
                      "prompt": causality.rating_prompt(task.truth, answer)})


def _cached_rating(task: _Task, answer: str, settings: ProbeSettings) -> int | None:
    key = _rating_key(task, answer, settings)
    record = read_json(task.cache_path(key))
    if not isinstance(record, dict) or record.get("key") != key:
        return None
    rating = record.get("rating")
    if not isinstance(rating, int) or isinstance(rating, bool) \
            or not causality.RATING_MIN <= rating <= causality.RATING_MAX:
        return None
    return rating


def _answer(task: _Task, asker: JsonAsker, settings: ProbeSettings) -> tuple[Any, float]:
    """The judge's answer to one probe, stored; raises JudgeError, OSError or ValueError."""
    data = task.sheet.path.read_bytes()
    if sha256_bytes(data) != task.image_sha256:
        raise JudgeError(f"{task.sheet.path} changed while it was probed")
    sheet = Image.open(io.BytesIO(data))
    image = probe_image(sheet, task.probe, settings.cover_corner)
    content = [{"type": "text", "text": task.text},
               {"type": "image_url", "image_url": {"url": image_data_url(image),
                                                  "detail": "high"}}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": content}]
    got: Answer | TextAnswer[str]
    value: Any
    if task.probe.kind == "pair":
        got = asker.ask(messages, "order_probe_pair", PAIR_SCHEMA)
        value = got.value["first"]
    elif task.probe.kind == "order":
        got = asker.ask(messages, "order_probe_order", ORDER_SCHEMA, _check_order)
        value = list(got.value["order"])
    else:
        got = ask_text(asker, messages, nonempty_text)
        value = got.value
    atomic_write_json(task.cache_path(), {
        "format": ANSWER_FORMAT, "key": task.key, "case_id": task.sheet.case_id,
        "image_sha256": task.image_sha256, "probe": task.probe.name,
        "stages": list(task.probe.stages), "judge_model": settings.judge_model,
        "question": task.text, "answer": value, "content": got.content,
        "tokens_in": got.tokens_in, "tokens_out": got.tokens_out,
        "cost_usd": got.cost_usd, "plugin_version": __version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    return value, got.cost_usd


def _rate(task: _Task, answer: str, rater: JsonAsker,
          settings: ProbeSettings) -> tuple[int, float]:
    """The rater's 0-5 for one free-text answer, stored; raises JudgeError or OSError."""
    key = _rating_key(task, answer, settings)
    prompt = causality.rating_prompt(task.truth, answer)
    got = ask_text(rater, [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
                   causality.read_rating)
    atomic_write_json(task.cache_path(key), {
        "format": RATING_FORMAT, "key": key, "case_id": task.sheet.case_id,
        "probe": task.probe.name, "answer_key": task.key, "rater_model": settings.rater,
        "ground_truth": task.truth, "answer": answer, "rating": got.value,
        "content": got.content, "tokens_in": got.tokens_in, "tokens_out": got.tokens_out,
        "cost_usd": got.cost_usd, "plugin_version": __version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    return got.value, got.cost_usd


def _settle(task: _Task, answer: Any, judge: JsonAsker | None, rater: JsonAsker | None,
            settings: ProbeSettings) -> Outcome:
    """Ask what the store lacks: the judge's answer (``answer`` None), then its rating."""
    asked: tuple[str, ...] = ()
    cost = 0.0
    if answer is None:
        asked = ("judge",)
        try:
            if judge is None:
                raise JudgeError("no judge to ask")
            answer, cost = _answer(task, judge, settings)
        except (JudgeError, OSError, ValueError) as exc:
            return task.outcome(error=str(exc), asked=asked)
    cached = () if asked else ("judge",)
    if task.probe.aspect == "order":
        return task.outcome(answer=answer, asked=asked, cached=cached, cost_usd=cost)
    try:
        if rater is None:
            raise JudgeError("no rater to ask")
        rating, spent = _rate(task, answer, rater, settings)
    except (JudgeError, OSError, ValueError) as exc:
        return task.outcome(answer=answer, truth=task.truth, error=f"rating: {exc}",
                            asked=(*asked, "rater"), cached=cached, cost_usd=cost)
    return task.outcome(answer=answer, rating=rating, truth=task.truth,
                        asked=(*asked, "rater"), cached=cached, cost_usd=cost + spent)


def probe_runs(runs: Sequence[ProbedRun], settings: ProbeSettings,
               asker: Callable[[], JsonAsker],
               rater: Callable[[], JsonAsker] | None = None) -> list[Outcome]:
    """Every probe of every sheet: stored answers and ratings first, then the rest asked
    concurrently.

    ``asker`` (the judge) and ``rater`` (default: ``asker``) are called only when something
    must be asked of them, so a fully cached re-run needs neither a key nor a server.
    """
    done: list[Outcome] = []
    pending: list[tuple[_Task, Any]] = []  # (task, its stored answer or None)
    for run in runs:
        for item in _tasks(run, settings):
            if isinstance(item, Outcome):
                done.append(item)
                continue
            answer = _cached(item)
            if answer is None:
                pending.append((item, None))
            elif item.probe.aspect == "order":
                done.append(item.outcome(answer=answer, cached=("judge",)))
            else:
                rating = _cached_rating(item, answer, settings)
                if rating is None:
                    pending.append((item, answer))
                else:
                    done.append(item.outcome(answer=answer, rating=rating, truth=item.truth,
                                             cached=("judge", "rater")))
    if pending:
        judge = asker() if any(answer is None for _, answer in pending) else None
        rates = any(task.probe.aspect != "order" for task, _ in pending)
        rates_with = (rater or asker)() if rates else None
        with ThreadPoolExecutor(max_workers=max(1, settings.concurrency)) as pool:
            done.extend(pool.map(lambda p: _settle(p[0], p[1], judge, rates_with, settings),
                                 pending))
    run_index = {str(run.path): i for i, run in enumerate(runs)}
    return sorted(done, key=lambda o: (run_index.get(o.run, 0), o.case_id,
                                       PROBE_NAMES.index(o.probe.name)))
