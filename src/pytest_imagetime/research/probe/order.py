"""The order probe: can the judge tell which of a sheet's panels comes first?

For every stored sheet of a run the judge sees five probe images, one request each: panels
t1 and t4 stacked in both orders, t2 and t3 in both orders, and all four panels in a seeded
shuffled grid. Answers are cached under the run, content-addressed by the sheet's bytes, the
probe and the judge model, so a re-run asks nothing twice. A request that fails is an error
with its reason, never a wrong answer. Metrics and verdicts: ``order_report``.
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
from ...judges.ask import JsonAsker
from ...judges.vlm import image_data_url
from ...rubric.judgment import JudgeError
from ...store.atomic import atomic_write_json, read_json
from ...store.keys import input_key, sha256_bytes
from ...store.paths import with_setting
from .images import grid_image, pair_image, panels
from .order_metrics import ranks_from_labels

PROBE_VERSION = "imagetime-order-probe/1"
ANSWER_FORMAT = "imagetime-order-probe-answer/1"
CACHE_DIR = "probe-order"
PAIRS: tuple[tuple[int, int], ...] = ((0, 3), (1, 2))  # t1/t4 and t2/t3
LABELS = ("1", "2", "3", "4")
PROBE_NAMES = ("t1-t4", "t1-t4:reversed", "t2-t3", "t2-t3:reversed", "order")

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
    (``stages[k]`` is the stage shown in cell k, labelled k + 1)."""

    name: str  # "t1-t4", "t1-t4:reversed", "t2-t3", "t2-t3:reversed", "order"
    stages: tuple[int, ...]

    @property
    def kind(self) -> str:
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
    if probe.kind == "pair":
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
                                  case.concept if case else None))
    return ProbedRun(path, model, tuple(sheets))


# ---------------------------------------------------------------- asking, with a cache


@dataclass(frozen=True)
class ProbeSettings:
    judge_model: str
    params: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    cover_corner: float = 0.0
    concurrency: int = 8


@dataclass(frozen=True)
class Outcome:
    """One probe of one sheet: its answer, or the reason there is none."""

    run: str
    model: str
    case_id: str
    domain: str
    probe: Probe
    answer: Any = None  # "A"/"B", or the labels in time order
    error: str | None = None
    cached: bool = False
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

    def cache_path(self) -> Path:
        return self.run.path / CACHE_DIR / f"{self.key}.json"

    def outcome(self, **values: Any) -> Outcome:
        return Outcome(str(self.run.path), self.run.model, self.sheet.case_id,
                       self.sheet.domain, self.probe, **values)


def _tasks(run: ProbedRun, settings: ProbeSettings) -> Iterable[_Task | Outcome]:
    for sheet in run.sheets:
        try:
            digest = sha256_bytes(sheet.path.read_bytes())
        except OSError as exc:
            for probe in probes_for(settings.seed, sheet.case_id, ""):
                yield Outcome(str(run.path), run.model, sheet.case_id, sheet.domain, probe,
                              error=f"cannot read {sheet.path}: {exc}")
            continue
        for probe in probes_for(settings.seed, sheet.case_id, digest):
            text = question(probe, sheet.concept)
            key = input_key({"probe_version": PROBE_VERSION, "image_sha256": digest,
                             "probe": probe.name, "stages": list(probe.stages),
                             "judge_model": settings.judge_model,
                             "params": dict(settings.params), "question": text,
                             "cover_corner": settings.cover_corner})
            yield _Task(run, sheet, digest, probe, text, key)


def _usable(probe: Probe, answer: Any) -> bool:
    if probe.kind == "pair":
        return answer in ("A", "B")
    return isinstance(answer, list) and sorted(map(str, answer)) == list(LABELS)


def _cached(task: _Task) -> Outcome | None:
    """The stored answer of this very probe; a missing or damaged one is asked again."""
    record = read_json(task.cache_path())
    if not isinstance(record, dict) or record.get("key") != task.key \
            or not _usable(task.probe, record.get("answer")):
        return None
    return task.outcome(answer=record["answer"], cached=True)


def _ask(task: _Task, asker: JsonAsker, settings: ProbeSettings) -> Outcome:
    try:
        data = task.sheet.path.read_bytes()
        if sha256_bytes(data) != task.image_sha256:
            raise JudgeError(f"{task.sheet.path} changed while it was probed")
        sheet = Image.open(io.BytesIO(data))
        image = probe_image(sheet, task.probe, settings.cover_corner)
        content = [{"type": "text", "text": task.text},
                   {"type": "image_url", "image_url": {"url": image_data_url(image),
                                                      "detail": "high"}}]
        messages = [{"role": "user", "content": content}]
        if task.probe.kind == "pair":
            answer = asker.ask(messages, "order_probe_pair", PAIR_SCHEMA)
            value: Any = answer.value["first"]
        else:
            answer = asker.ask(messages, "order_probe_order", ORDER_SCHEMA, _check_order)
            value = list(answer.value["order"])
    except (JudgeError, OSError, ValueError) as exc:
        return task.outcome(error=str(exc))
    atomic_write_json(task.cache_path(), {
        "format": ANSWER_FORMAT, "key": task.key, "case_id": task.sheet.case_id,
        "image_sha256": task.image_sha256, "probe": task.probe.name,
        "stages": list(task.probe.stages), "judge_model": settings.judge_model,
        "question": task.text, "answer": value, "content": answer.content,
        "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out,
        "cost_usd": answer.cost_usd, "plugin_version": __version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    return task.outcome(answer=value, cost_usd=answer.cost_usd)


def probe_runs(runs: Sequence[ProbedRun], settings: ProbeSettings,
               asker: Callable[[], JsonAsker]) -> list[Outcome]:
    """Every probe of every sheet: cached answers first, then the rest asked concurrently.

    ``asker`` is called only when something must be asked, so a fully cached re-run needs
    neither a key nor a server.
    """
    done: list[Outcome] = []
    pending: list[_Task] = []
    for run in runs:
        for item in _tasks(run, settings):
            if isinstance(item, Outcome):
                done.append(item)
            else:
                hit = _cached(item)
                if hit is None:
                    pending.append(item)
                else:
                    done.append(hit)
    if pending:
        client = asker()
        with ThreadPoolExecutor(max_workers=max(1, settings.concurrency)) as pool:
            done.extend(pool.map(lambda t: _ask(t, client, settings), pending))
    run_index = {str(run.path): i for i, run in enumerate(runs)}
    return sorted(done, key=lambda o: (run_index.get(o.run, 0), o.case_id,
                                       PROBE_NAMES.index(o.probe.name)))
