"""``imagetime label export``: a sample of stored sheets as a self-contained HTML form.

The form needs no server and no network: sheets are inlined as base64 PNG, answers live in
the browser's localStorage and leave as a CSV download. It shows no judge output and no
model name, so annotators label blind to both.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from importlib import resources
from pathlib import Path

from PIL import Image

from ...cases.model import Case, Predicate
from ...rubric.facts import C_DIMS, DIM_FOCUS, SCORE_MAX, SCORE_MIN, Setting, nullable_dims
from .columns import NOT_ASKED, PREDICATE_ANSWERS, SHEET_ANSWERS, wide_columns, write_csv
from .runs import RunError, RunItem
from .sample import stratified_sample

INTRO = (
    " <p>Each item is one image that should hold four moments of one process as a 2x2 grid,"
    " read\n left to right, top to bottom. Answer from the image alone: do not look at any"
    " judge's scores\n or at another annotator's answers. Answer \"unsure\" when the image"
    " does not show enough to tell.\n Answers are kept in this browser as you go; when you"
    " are done, press <b>Download CSV</b>\n and send the file back.</p>")
STAGE_NAMES = {"t1": "panel 1 (t1)", "t2": "panel 2 (t2)", "t3": "panel 3 (t3)",
               "t4": "panel 4 (t4)", "all": "all panels"}


@dataclass(frozen=True)
class FormItem:
    number: int
    model: str
    case_id: str
    domain: str
    prompt: str
    predicates: tuple[Predicate, ...]
    dims: tuple[str, ...]  # the C dimensions this item is rated on
    png: bytes

    def row(self, annotator: str) -> dict[str, str]:
        """The item's row of items.csv: keys filled, answers empty, absent questions n/a."""
        row = {"item": str(self.number), "model": self.model, "case_id": self.case_id,
               "domain": self.domain, "annotator": annotator, "valid_sheet": "", "notes": ""}
        row.update({p.id: "" for p in self.predicates})
        row.update({d: "" if d in self.dims else NOT_ASKED for d in C_DIMS})
        return row


def sheet_png(path: Path, max_px: int) -> bytes:
    """The sheet as PNG, scaled down when larger than ``max_px`` (keeps the form small)."""
    with Image.open(path) as image:
        image.load()
        if max(image.size) > max_px:
            image.thumbnail((max_px, max_px), Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def labellable(items: Sequence[RunItem]) -> list[RunItem]:
    """One item per (model, case) with a stored sheet: judges share a model's images."""
    unique: dict[tuple[str, str], RunItem] = {}
    for item in items:
        if item.image is not None:
            unique.setdefault((item.model, item.case_id), item)
    return list(unique.values())


def build_items(items: Sequence[RunItem], cases: dict[str, Case], size: int, seed: int,
                max_px: int) -> list[FormItem]:
    pool = labellable(items)
    if not pool:
        raise RunError("no stored sheets in these runs to label")
    unknown = sorted({i.case_id for i in pool if i.case_id not in cases})
    if unknown:
        raise RunError(f"{len(unknown)} case ids not among the loaded cases (give the case "
                       f"files with --cases): {', '.join(unknown[:5])}")
    changed = sorted({i.case_id for i in pool
                      if i.data.get("case_sha256") not in (None, "", cases[i.case_id].spec_hash)})
    if changed:  # a sheet labelled against another text than it was made from is mislabelled
        raise RunError(f"{len(changed)} cases differ from the text their sheets were made "
                       f"from (give the case files of the runs with --cases): "
                       f"{', '.join(changed[:5])}")
    chosen = stratified_sample(pool, size, seed, stratum=lambda i: (i.domain, i.model),
                               ident=lambda i: (i.model, i.case_id))
    out = []
    for number, item in enumerate(chosen, start=1):
        case = cases[item.case_id]
        setting: Setting = "scaffold" if item.data.get("setting") == "scaffold" else "prompt-only"
        null = nullable_dims(setting, case.applicable)
        image = item.image
        assert image is not None  # labellable() kept only items with a sheet
        out.append(FormItem(number, item.model, item.case_id, item.domain, case.prompt,
                            case.predicates, tuple(d for d in C_DIMS if d not in null),
                            sheet_png(image, max_px)))
    return out


# ---------------------------------------------------------------- the form


def _radios(number: int, field: str, choices: Sequence[str]) -> str:
    name = f"i{number}-{hashlib.sha256(field.encode()).hexdigest()[:8]}"
    return "".join(f'<label><input type="radio" name="{name}" value="{c}" '
                   f'data-field="{escape(field)}"> {c}</label> ' for c in choices)


def _item_html(item: FormItem, count: int) -> str:
    predicates = "".join(
        f'<li><span class="stage">{escape(STAGE_NAMES.get(p.stage, p.stage))}</span> '
        f'{escape(p.text)}<div class="choices">'
        f'{_radios(item.number, p.id, PREDICATE_ANSWERS)}</div></li>' for p in item.predicates)
    options = '<option value="">-</option>' + "".join(
        f'<option value="{v}">{v}</option>' for v in range(SCORE_MIN, SCORE_MAX + 1))
    ratings = "".join(
        f'<tr><th>{d} {escape(C_DIMS[d])}</th><td class="focus">{escape(DIM_FOCUS[d])}</td>'
        f'<td><select data-field="{d}" aria-label="{d}">{options}</select></td></tr>'
        for d in item.dims)
    image = base64.b64encode(item.png).decode("ascii")
    return f"""
<section class="item" id="item-{item.number}" data-item="{item.number}">
 <h2>Item {item.number} of {count} <span class="case">{escape(item.case_id)}</span></h2>
 <img class="sheet" alt="sheet of item {item.number}" src="data:image/png;base64,{image}">
 <details open><summary>Prompt</summary><p class="prompt">{escape(item.prompt)}</p></details>
 <h3>1. Is this a valid 2x2 sheet: four complete panels in reading order?</h3>
 <div class="choices">{_radios(item.number, "valid_sheet", SHEET_ANSWERS)}</div>
 <h3>2. Is each statement true in the sheet?</h3>
 <ol class="predicates">{predicates}</ol>
 <h3>3. Rate each dimension from 0 (fails) to 10 (fully met)</h3>
 <table class="ratings">{ratings}</table>
 <h3>Notes</h3>
 <textarea data-field="notes" rows="2"></textarea>
 <p class="state" aria-live="polite"></p>
</section>"""


def _script_json(data: object) -> str:
    """JSON safe inside a <script> element: no '</script>' or '<!--' can close it."""
    return json.dumps(data, sort_keys=True).replace("<", "\\u003c").replace(">", "\\u003e")


def fill_form(parts: dict[str, str]) -> str:
    """The form page with its placeholders ({{TITLE}}, {{ITEMS}}, ...) filled in."""
    template = resources.files("pytest_imagetime.research.labels").joinpath("form.html").read_text(
        encoding="utf-8")
    # One pass: text put in by one placeholder is never read for another.
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: parts[m.group(1)], template)


def form_html(items: Sequence[FormItem], annotator: str, key: str) -> str:
    columns = wide_columns(p.id for i in items for p in i.predicates)
    meta = {"key": key, "columns": columns, "not_asked": NOT_ASKED,
            "items": [{"item": i.number, "model": i.model, "case_id": i.case_id,
                       "domain": i.domain, "predicates": [p.id for p in i.predicates],
                       "dims": list(i.dims)} for i in items]}
    return fill_form({"TITLE": "ImageTime labelling form", "HEADING": "ImageTime labels",
                      "INTRO": INTRO, "ANNOTATOR": escape(annotator), "COUNT": str(len(items)),
                      "META": _script_json(meta),
                      "ITEMS": "".join(_item_html(i, len(items)) for i in items)})


def storage_key(items: Sequence[FormItem], seed: int, annotator: str) -> str:
    """Which saved answers belong to this form: the sample and its annotator."""
    text = json.dumps([seed, annotator, [(i.model, i.case_id) for i in items]])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def export(items: Sequence[RunItem], cases: dict[str, Case], out: Path, size: int, seed: int,
           annotator: str = "", max_px: int = 1024) -> list[Path]:
    chosen = build_items(items, cases, size, seed, max_px)
    out.mkdir(parents=True, exist_ok=True)
    form = out / "form.html"
    form.write_text(form_html(chosen, annotator, storage_key(chosen, seed, annotator)),
                    encoding="utf-8")
    table = out / "items.csv"
    columns = wide_columns(p.id for i in chosen for p in i.predicates)
    # Another item's predicate column is a question this item does not have: n/a, as the form
    # writes it, so that filling every empty cell in a spreadsheet answers only real ones.
    write_csv(table, columns,
              [{**dict.fromkeys(columns, NOT_ASKED), **i.row(annotator)} for i in chosen])
    return [form, table]
