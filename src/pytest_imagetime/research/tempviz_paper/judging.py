"""``imagetime tempviz judge``: the paper's whole-prompt judge over stored TempViz images.

One question per image; the table it writes (``model, judge, id, category, index,
prediction, analysis, error``) is what ``imagetime tempviz prf`` scores against the people's
Q2 AND Q3. An image whose answer could not be had keeps an empty prediction and its error.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image

from ...judges.vlm import image_data_url
from ...rubric.judgment import JudgeError
from ...tempviz.judge import WholePromptJudge
from ...tempviz.prompts import Prompt, check_directory, load_table
from .images import TempvizImage

COLUMNS = ("model", "judge", "id", "category", "index", "prediction", "analysis", "error")


def load_prompts(data: Path) -> dict[str, Prompt]:
    """Every prompt of the tables in ``data`` by item id (``Maps-0``)."""
    return {p.id: p for table in check_directory(data) for p in load_table(table)}


def judge_images(judge: WholePromptJudge, images: Sequence[TempvizImage],
                 prompts: Mapping[str, Prompt], concurrency: int) -> list[dict[str, str]]:
    """One row per image with a prompt, in the order given; missing prompts are named."""
    known = [i for i in images if i.id in prompts]
    unknown = [i.id for i in images if i.id not in prompts]
    if unknown:
        print(f"imagetime tempviz judge: {len(unknown)} images have no row in the tables, "
              f"left out: {', '.join(unknown[:5])}", file=sys.stderr)

    def one(image: TempvizImage) -> dict[str, str]:
        row = {"model": image.model, "judge": judge.name, "id": image.id,
               "category": image.category, "index": image.index, "prediction": "",
               "analysis": "", "error": ""}
        try:
            with Image.open(image.path) as picture:
                url = image_data_url(picture, image.path)
            answer, _cost = judge.answer(prompts[image.id], url)
        except (JudgeError, OSError) as exc:
            return {**row, "error": str(exc)}
        return {**row, "prediction": answer.answer, "analysis": answer.analysis or ""}

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(one, known))
