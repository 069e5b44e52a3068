"""TempViz human labels: the paper's sample of 500 images balanced across categories and
models, and the labelling form with its three questions Q1-Q3 as the paper poses them.

The sample gives every (category, model) cell the same share: 500 over 5 categories and 5
models is 20 a cell. A cell with fewer images than its share gives all it has, and the rest
goes to the other cells, still equally; what does not divide evenly goes one each to the
cells first in (category, model) order. Within a cell the images are drawn at random with
the seed, and the form shows them in a seeded random order.

The form shows what the paper's annotators saw: the prompt, the image, and the expected
appearance (``expectedValue``) and reference images (``goldenrecordImages``, as links) where
the table has them. Its CSV has ``item, model, id, category, index, promptcategory,
annotator, q1, q2, q3, notes``; ``imagetime agree`` reads it as it is.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from ...tempviz.prompts import Prompt
from ..tempviz_paper.images import TempvizImage
from .columns import SHEET_ANSWERS, write_csv
from .export import _radios, _script_json, fill_form, sheet_png

QUESTIONS: Mapping[str, str] = {  # the paper's Section 4.1, verbatim
    "q1": "Is the image free from any visual generation errors?",
    "q2": "Is the subject present in the image?",
    "q3": "Did the model apply the required temporal knowledge correctly?",
}
COLUMNS = ("item", "model", "id", "category", "index", "promptcategory", "annotator",
           *QUESTIONS, "notes")
SAMPLE = 500
INTRO = (" <p>Each item is one image made by a text-to-image model from the prompt shown. "
         "Answer the three questions yes or no, from the image, the prompt, and where given "
         "the expected appearance and the reference images. Q1: only visibly distorted images "
         "count as errors. Do not look at any judge's answers or at another annotator's. "
         "Answers are kept in this browser as you go; when you are done, press "
         "<b>Download CSV</b> and send the file back.</p>")


def balanced_counts(sizes: Mapping[tuple[str, str], int], total: int
                    ) -> dict[tuple[str, str], int]:
    """Equal shares per cell, capped at the cell's size, the rest shared out again."""
    counts = dict.fromkeys(sizes, 0)
    left = min(total, sum(sizes.values()))
    while left > 0:
        open_cells = sorted(c for c in sizes if counts[c] < sizes[c])
        share, extra = divmod(left, len(open_cells))
        for n, cell in enumerate(open_cells):
            take = min(share + (1 if n < extra else 0), sizes[cell] - counts[cell])
            counts[cell] += take
            left -= take
    return counts


def balanced_sample(images: Sequence[TempvizImage], total: int, seed: int
                    ) -> list[TempvizImage]:
    cells: dict[tuple[str, str], list[TempvizImage]] = {}
    for image in sorted(images, key=lambda i: (i.model, i.category, int(i.index)
                                               if i.index.isdigit() else 0, i.index)):
        cells.setdefault((image.category, image.model), []).append(image)
    counts = balanced_counts({c: len(v) for c, v in cells.items()}, total)
    rng = random.Random(seed)
    chosen = [i for c in sorted(cells) for i in rng.sample(cells[c], counts[c])]
    rng.shuffle(chosen)
    return chosen


@dataclass(frozen=True)
class TempvizFormItem:
    number: int
    image: TempvizImage
    prompt: Prompt
    references: tuple[str, ...]
    png: bytes

    def row(self, annotator: str) -> dict[str, str]:
        return {"item": str(self.number), "model": self.image.model, "id": self.image.id,
                "category": self.image.category, "index": self.image.index,
                "promptcategory": self.prompt.promptcategory, "annotator": annotator}


def _item_html(item: TempvizFormItem, count: int) -> str:
    expected = (f'<p><b>Expected appearance:</b> {escape(", ".join(item.prompt.expected))}</p>'
                if item.prompt.expected else "")
    links = "".join(f'<li><a href="{escape(u)}" target="_blank" rel="noopener">'
                    f'{escape(u.rsplit("/", 1)[-1] or u)}</a></li>' for u in item.references)
    references = f"<p><b>Reference images:</b></p><ul>{links}</ul>" if links else ""
    questions = "".join(
        f'<h3>{q.upper()}. {escape(text)}</h3>'
        f'<div class="choices">{_radios(item.number, q, SHEET_ANSWERS)}</div>'
        for q, text in QUESTIONS.items())
    image = base64.b64encode(item.png).decode("ascii")
    return f"""
<section class="item" id="item-{item.number}" data-item="{item.number}">
 <h2>Item {item.number} of {count} <span class="case">{escape(item.image.id)}</span></h2>
 <img class="sheet" alt="image of item {item.number}" src="data:image/png;base64,{image}">
 <details open><summary>Prompt</summary><p class="prompt">{escape(item.prompt.prompt)}</p>
 {expected}{references}</details>
 {questions}
 <h3>Notes</h3>
 <textarea data-field="notes" rows="2"></textarea>
 <p class="state" aria-live="polite"></p>
</section>"""


def form_html(items: Sequence[TempvizFormItem], annotator: str, key: str) -> str:
    meta = {"key": key, "columns": list(COLUMNS), "not_asked": "n/a",
            "items": [{"item": i.number, "asked": list(QUESTIONS),
                       "keys": {k: v for k, v in i.row("").items() if k != "annotator"}}
                      for i in items]}
    return fill_form({"TITLE": "TempViz labelling form", "HEADING": "TempViz labels",
                      "INTRO": INTRO, "ANNOTATOR": escape(annotator), "COUNT": str(len(items)),
                      "META": _script_json(meta),
                      "ITEMS": "".join(_item_html(i, len(items)) for i in items)})


def references(table: Path, index: str) -> tuple[str, ...]:
    """The reference image links of one table row (the ``goldenrecordImages`` columns)."""
    with table.open(encoding="utf-8-sig", newline="") as fh:
        for row in csv.reader(fh):
            header = row
            break
        for row in csv.reader(fh):
            if row and row[0].strip() == index:
                return tuple(dict.fromkeys(
                    u.strip() for name, cell in zip(header, row, strict=False)
                    if name.strip() == "goldenrecordImages" for u in cell.split(",")
                    if u.strip().startswith(("http://", "https://"))))
    return ()


def export_tempviz(images: Sequence[TempvizImage], prompts: Mapping[str, Prompt], out: Path,
                   size: int, seed: int, annotator: str = "", max_px: int = 1024) -> list[Path]:
    """``form.html`` and ``items.csv`` for a balanced sample of ``images``."""
    labellable = [i for i in images if i.id in prompts]
    if not labellable:
        raise ValueError("no stored TempViz image has a row in the tables")
    chosen = balanced_sample(labellable, size, seed)
    items = [TempvizFormItem(n, image, prompts[image.id],
                             references(Path(prompts[image.id].source), image.index),
                             sheet_png(image.path, max_px))
             for n, image in enumerate(chosen, start=1)]
    key = hashlib.sha256(json.dumps([seed, annotator, [(i.image.model, i.image.id)
                                                        for i in items]]).encode()
                         ).hexdigest()[:16]
    out.mkdir(parents=True, exist_ok=True)
    form = out / "form.html"
    form.write_text(form_html(items, annotator, key), encoding="utf-8")
    table = out / "items.csv"
    write_csv(table, COLUMNS, [i.row(annotator) for i in items])
    return [form, table]
