"""The runner of ``imagetime baseline clipscore|caption``: a baseline score for every stored image.

The table has one row per image keyed by ``model,case_id`` with the score in ``score``, so
``imagetime agree`` correlates it with yes/no labels (point-biserial) or with scores.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from ...cases.loading import builtin_cases_dir
from ...cases.model import Case
from ..labels.columns import write_csv
from ..labels.runs import RunError, load_cases
from .caption_similarity import CaptionSimilarityScorer
from .clipscore import ClipScorer
from .items import ImageItem, find_items, read_prompts
from .loading import BaselineError, batches
from .prompts import STRIPS

COLUMNS = {"clipscore": ("model", "case_id", "score", "cosine"),
           "caption": ("model", "case_id", "score", "caption", "text")}
SHOWN = 5  # image keys named in a warning
DIGITS = 6

Rows = list[dict[str, str]]
ScoreChunk = Callable[[Sequence[Image.Image], Sequence[str]], Rows]


def _cases(paths: Sequence[str]) -> Callable[[], Mapping[str, Case]]:
    def load() -> Mapping[str, Case]:
        try:
            return load_cases([Path(p) for p in paths] or [builtin_cases_dir()])
        except RunError as exc:
            raise BaselineError(str(exc)) from None
    return load


def _number(value: float) -> str:
    return f"{value:.{DIGITS}f}"


def _clipscore(args: argparse.Namespace) -> tuple[ScoreChunk, Callable[[Sequence[str]], int]]:
    scorer = ClipScorer(args.model, args.device, args.batch_size)
    strip = STRIPS[args.strip]

    def score(images: Sequence[Image.Image], prompts: Sequence[str]) -> Rows:
        return [{"score": _number(r.score), "cosine": _number(r.cosine)}
                for r in scorer.score(images, [strip(p) for p in prompts])]

    def truncated(prompts: Sequence[str]) -> int:
        return sum(scorer.is_truncated(t) for t in dict.fromkeys(strip(p) for p in prompts))
    return score, truncated


def _caption(args: argparse.Namespace) -> tuple[ScoreChunk, Callable[[Sequence[str]], int]]:
    strip = STRIPS[args.strip]
    scorer = CaptionSimilarityScorer(args.captioner, args.embedder, args.device, args.batch_size,
                                     strip)

    def score(images: Sequence[Image.Image], prompts: Sequence[str]) -> Rows:
        return [{"score": _number(r.score), "caption": r.caption, "text": r.text}
                for r in scorer.score(images, prompts)]

    def truncated(prompts: Sequence[str]) -> int:
        texts = dict.fromkeys(strip(p) for p in prompts)
        return sum(scorer.embedder.is_truncated(t) for t in texts)
    return score, truncated


def _open(path: Path) -> Image.Image:
    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except OSError as exc:
        raise BaselineError(f"{path}: cannot read the image: {exc}") from None


def score_items(items: Sequence[ImageItem], score: ScoreChunk, batch_size: int) -> Rows:
    """Rows in item order; images are opened one batch at a time to bound memory."""
    rows: Rows = []
    shown = sys.stderr.isatty()  # a count in place for people, nothing in logs
    for chunk in batches(items, batch_size):
        images = [_open(item.image) for item in chunk]
        for item, values in zip(chunk, score(images, [i.prompt for i in chunk]), strict=True):
            rows.append({"model": item.model, "case_id": item.case_id, **values})
        if shown:
            end = "\n" if len(rows) == len(items) else ""
            print(f"\rimagetime baseline: {len(rows)}/{len(items)} images", end=end,
                  file=sys.stderr, flush=True)
    return rows


def _warn(reason: str, keys: Sequence[str]) -> None:
    if keys:
        images = "image" if len(keys) == 1 else "images"
        more = ", ..." if len(keys) > SHOWN else ""
        print(f"imagetime baseline: {len(keys)} {images} left out: {reason}: "
              f"{', '.join(keys[:SHOWN])}{more}", file=sys.stderr)


def _write(rows: Rows, columns: Sequence[str], out: str | None) -> None:
    if out is not None:

        write_csv(Path(out), columns, rows)
        return
    writer = csv.DictWriter(sys.stdout, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def run(args: argparse.Namespace) -> int:
    metric: str = args.metric
    if args.batch_size < 1:
        print("imagetime baseline: --batch-size must be at least 1", file=sys.stderr)
        return 2
    try:
        prompts = read_prompts(Path(args.prompts)) if args.prompts else {}
        found = find_items(args.runs, prompts, _cases(args.cases))
        if not found.items and not found.without_prompt and not found.changed:
            raise BaselineError(f"no images (images/*.png) in {', '.join(args.runs)}")
        _warn("no prompt in the record, --prompts or --cases", found.without_prompt)
        _warn("the case prompt changed after generation", found.changed)
        if not found.items:
            raise BaselineError("no image left to score")
        score, truncated = _clipscore(args) if metric == "clipscore" else _caption(args)
        rows = score_items(found.items, score, args.batch_size)
        cut = truncated([i.prompt for i in found.items])
    except BaselineError as exc:
        print(f"imagetime baseline: {exc}", file=sys.stderr)
        return 2
    if cut:
        limit = "CLIP's 77 tokens" if metric == "clipscore" else "the embedder's token limit"
        prompts_are = "prompt is" if cut == 1 else "prompts are"
        print(f"imagetime baseline: {cut} {prompts_are} longer than {limit}: only the "
              "opening tokens were read", file=sys.stderr)
    columns = COLUMNS[metric]
    scores = [float(r["score"]) for r in rows]
    summary: dict[str, Any] = {"metric": metric, "n": len(rows),
                               "mean": statistics.fmean(scores), "truncated": cut,
                               "models": sorted({r["model"] for r in rows})}
    if args.json:
        if args.out:
            _write(rows, columns, args.out)
        print(json.dumps({**summary, "table": args.out, "rows": rows}, indent=1))
        return 0
    _write(rows, columns, args.out)
    if args.out:
        print(f"wrote {args.out}: {len(rows)} images, {metric} mean {summary['mean']:.3f}")
    return 0
