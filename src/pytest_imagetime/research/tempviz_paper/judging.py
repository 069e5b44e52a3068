"""``imagetime tempviz judge``: the paper's whole-prompt judge over stored TempViz images.

One question per image; the table it writes (``model, judge, id, category, index,
prediction, analysis, error``) is what ``imagetime tempviz prf`` scores against the people's
Q2 AND Q3. An image whose answer could not be had keeps an empty prediction and its error.
Each answer is stored under a key of the image's bytes, the question, the judge model, its
style, parameters and the exemplars shown, so a rerun asks only what is missing.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ...rubric.judgment import JudgeError
from ...store.keys import sha256_bytes
from ...tempviz.judge import (
    WHOLE_PROMPT_VERSION,
    Exemplar,
    WholePromptJudge,
    out_of_distribution,
    whole_prompt_text,
)
from ...tempviz.prompts import Prompt, check_directory, load_table
from .answer_store import AnswerStore, Slot, image_digest, image_url
from .images import TempvizImage
from .tally import Reply, Tally

COLUMNS = ("model", "judge", "id", "category", "index", "prediction", "analysis", "error")
JUDGE_STORE = "paper-judge"  # beside a run's images/: <model>/tempviz/paper-judge


def load_prompts(data: Path) -> dict[str, Prompt]:
    """Every prompt of the tables in ``data`` by item id (``Maps-0``)."""
    return {p.id: p for table in check_directory(data) for p in load_table(table)}


def exemplars_digest(shown: Sequence[Exemplar], style: str) -> str:
    """What the judge is shown of its exemplars: their texts, verdicts and images."""
    return sha256_bytes(json.dumps([
        {"prompt": e.prompt, "cue": e.cue, "answer": e.answer, "category": e.category,
         "analysis": e.analysis if style == "instructed" else "",
         "image_sha256": sha256_bytes(e.image_url.encode())} for e in shown]).encode())


def answer_key(judge: WholePromptJudge, prompt: Prompt, digest: str) -> dict[str, Any]:
    """Everything that decides the judge's answer about one image (not the endpoint);
    ValueError when the item's category leaves too few exemplars."""
    shown = out_of_distribution(judge.exemplars, prompt.category, judge.shots)
    return {"command": "tempviz judge", "version": WHOLE_PROMPT_VERSION,
            "image_sha256": digest, "judge_model": judge.options.model, "style": judge.style,
            "shots": judge.shots, "exemplars": exemplars_digest(shown, judge.style),
            "text": whole_prompt_text(judge.style, prompt.prompt,
                                      question=prompt.questions["q3"]),
            "params": dict(judge.options.params)}


def _usable(value: Any) -> bool:
    return isinstance(value, dict) and value.get("answer") in ("yes", "no") \
        and isinstance(value.get("analysis"), str | None)


def _answered(row: dict[str, str], value: Mapping[str, Any]) -> dict[str, str]:
    return {**row, "prediction": value["answer"], "analysis": value["analysis"] or ""}


def judge_images(judge: WholePromptJudge, images: Sequence[TempvizImage],
                 prompts: Mapping[str, Prompt], concurrency: int, store: AnswerStore,
                 tally: Tally, asker: Callable[[], WholePromptJudge] | None = None
                 ) -> list[dict[str, str]]:
    """One row per image with a prompt, in the order given; missing prompts are named.

    Stored answers are reused; ``asker`` (default: ``judge`` itself) makes the judge that
    asks the rest, called only when something is missing, so a fully stored rerun needs
    neither a key nor a server.
    """
    known = [i for i in images if i.id in prompts]
    unknown = [i.id for i in images if i.id not in prompts]
    if unknown:
        print(f"imagetime tempviz judge: {len(unknown)} images have no row in the tables, "
              f"left out: {', '.join(unknown[:5])}", file=sys.stderr)
    rows: list[dict[str, str]] = []
    pending: list[tuple[int, TempvizImage, str, Slot]] = []
    for image in known:
        row = {"model": image.model, "judge": judge.name, "id": image.id,
               "category": image.category, "index": image.index, "prediction": "",
               "analysis": "", "error": ""}
        try:
            digest = image_digest(image.path)
        except OSError as exc:
            tally.fail()
            rows.append({**row, "error": str(exc)})
            continue
        slot = store.slot(answer_key(judge, prompts[image.id], digest), image.path)
        stored = slot.stored(_usable)
        rows.append(row if stored is None else _answered(row, tally.reuse(stored)))
        if stored is None:
            pending.append((len(rows) - 1, image, digest, slot))
    if not pending:
        return rows
    calling = judge if asker is None else asker()

    def call(image: TempvizImage, digest: str) -> Reply:
        answer, cost = calling.answer(prompts[image.id], image_url(image.path, digest))
        return {"answer": answer.answer, "analysis": answer.analysis}, answer.content, cost

    def one(task: tuple[int, TempvizImage, str, Slot]) -> None:
        at, image, digest, slot = task
        about = {"command": "tempviz judge", "id": image.id, "model": image.model,
                 "image_sha256": digest, "judge": judge.name,
                 "judge_model": judge.options.model}
        try:
            value = tally.ask(slot, lambda: call(image, digest), about)
        except (JudgeError, OSError) as exc:
            tally.fail()
            rows[at] = {**rows[at], "error": str(exc)}
            return
        rows[at] = _answered(rows[at], value)

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        list(pool.map(one, pending))
    return rows
