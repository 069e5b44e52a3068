"""The TempViz HTML report: one page that opens from disk.

At the top, accuracy per question, category and model side by side (the TempViz paper's
figure 2) with the combined Q2 and Q3 label; below, one card per item and model with its
thumbnail, prompt, answers and, in the instructed style, the judge's analyses. Thumbnails
are files beside the page (``media/<model>/<id>.jpg``), loaded lazily.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PIL import Image

from ..report.html import esc, page, url
from ..store.atomic import atomic_write_bytes, read_json
from ..store.paths import dir_slug
from .names import CATEGORIES
from .prompts import QUESTION_NAMES
from .report import COMBINED, LABELS

INDEX = "index.html"
MEDIA = "media"
THUMB_PX = 320
EXTRA_CSS = """
.fig td.cat { font-weight: 600; }
.fig tr.group td { border-top: 2px solid var(--line); }
.yes { color: var(--ok); font-weight: 600; }
.no { color: var(--bad); font-weight: 600; }
.answers { margin: .3rem 0; padding: 0; list-style: none; }
"""
LABEL_NAMES: Mapping[str, str] = {**{q: f"{q.upper()} {n}" for q, n in QUESTION_NAMES.items()},
                                  COMBINED: "Q2 and Q3 (subject present, time right)"}


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _thumb(source: Path, dest: Path) -> bool:
    """A JPEG thumbnail, made again only when the image is newer; False when unreadable."""
    try:
        if dest.exists() and dest.stat().st_mtime_ns >= source.stat().st_mtime_ns:
            return True
        dest.parent.mkdir(parents=True, exist_ok=True)
        with Image.open(source) as image:
            small = image.convert("RGB")
        small.thumbnail((THUMB_PX, THUMB_PX), Image.Resampling.LANCZOS)
        small.save(dest, format="JPEG", quality=82)
    except (OSError, ValueError):
        return False
    return True


def _media(reports: Sequence[Mapping[str, Any]], out: Path) -> dict[tuple[int, str], str]:
    """Thumbnail paths inside the folder by (run number, item id), made in parallel."""
    jobs: dict[tuple[int, str], tuple[Path, Path, str]] = {}
    for number, report in enumerate(reports):
        folder = f"{MEDIA}/{dir_slug(report['manifest']['model']['spec'])}"
        for item in report["items"]:
            if item["image"] and Path(item["image"]).is_file():
                rel = f"{folder}/{item['id']}.jpg"
                jobs[(number, item["id"])] = (Path(item["image"]), out / rel, rel)
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        made = list(pool.map(lambda job: _thumb(job[0], job[1]), jobs.values()))
    return {key: job[2] for (key, job), ok in zip(jobs.items(), made, strict=True) if ok}


def _run_name(report: Mapping[str, Any]) -> str:
    manifest = report["manifest"]
    return f"{manifest['model']['spec']} | {manifest['judge']['name']}"


def figure(reports: Sequence[Mapping[str, Any]]) -> str:
    """Accuracy (%) per category and question, one column per run."""
    head = "".join(f"<th>{esc(_run_name(r))}</th>" for r in reports)
    rows = []
    categories = [c for c in CATEGORIES if any(c in r["by_category"] for r in reports)]
    for category in [*categories, "all"]:
        for n, name in enumerate(LABELS):
            cells = []
            for report in reports:
                entry = (report["summary"] if category == "all"
                         else report["by_category"].get(category))
                cells.append(f"<td>{_pct(entry['accuracy'][name]) if entry else '–'}</td>")
            first = (f'<td class="text cat" rowspan="{len(LABELS)}">{esc(category)}</td>'
                     if n == 0 else "")
            group = ' class="group"' if n == 0 else ""
            rows.append(f"<tr{group}>{first}<td class=\"text\">{esc(LABEL_NAMES[name])}</td>"
                        f"{''.join(cells)}</tr>")
    counts = "".join(f"<td>{r['summary']['answered']} / {r['summary']['n']}</td>"
                     for r in reports)
    rows.append(f'<tr class="group"><td class="text" colspan="2">answered / items</td>'
                f"{counts}</tr>")
    return (f'<div class="scroll"><table class="fig"><tr><th class="text">category</th>'
            f'<th class="text">question</th>{head}</tr>{"".join(rows)}</table></div>')


def _analyses(item: Mapping[str, Any]) -> Mapping[str, str]:
    record = read_json(Path(item["judgment"])) if item.get("judgment") else None
    answers = record.get("answers") if isinstance(record, dict) else None
    if not isinstance(answers, dict):
        return {}
    return {q: str(a["analysis"]) for q, a in answers.items()
            if isinstance(a, dict) and a.get("analysis")}


def card(item: Mapping[str, Any], thumb: str | None) -> str:
    picture = (f'<img src="{url(thumb)}" alt="{esc(item["id"])}" loading="lazy">' if thumb
               else '<div class="muted">no image</div>')
    analyses = _analyses(item)
    answers = []
    for q, name in QUESTION_NAMES.items():
        value = item["answers"][q]
        shown = f'<span class="{value}">{value}</span>' if value else "–"
        why = f' <span class="muted">{esc(analyses[q])}</span>' if q in analyses else ""
        answers.append(f"<li>{q.upper()} {esc(name)}: {shown}{why}</li>")
    error = f'<p class="reason">{esc(item["error"])}</p>' if item["error"] else ""
    return (f'<div class="card" id="{esc(item["id"])}">{picture}<div>'
            f'<h2>{esc(item["id"])}<span class="outcome {item["status"]}">'
            f'{esc(item["status"])}</span></h2>'
            f'<p>{esc(item["prompt"])}</p><p class="muted">{esc(item["promptcategory"])}, '
            f'difficulty {esc(item["difficulty"])}</p>'
            f'<ul class="answers">{"".join(answers)}</ul>{error}</div></div>')


def render(reports: Sequence[Mapping[str, Any]], media: Mapping[tuple[int, str], str]) -> str:
    sections = []
    for number, report in enumerate(reports):
        cards = "".join(card(item, media.get((number, item["id"])))
                        for item in report["items"])
        summary = report["summary"]
        sections.append(f"<details><summary><b>{esc(_run_name(report))}</b>: "
                        f"{summary['n']} items, {summary['passed']} passed, "
                        f"{summary['failed']} failed, {summary['errors']} errors</summary>"
                        f"{cards}</details>")
    body = (f"<h1>TempViz</h1><p class=\"muted\">Accuracy in % (share of yes among the "
            f"answered items); an item passes when all three answers are yes.</p>"
            f"{figure(reports)}{''.join(sections)}")
    return page("TempViz", f"<style>{EXTRA_CSS}</style>{body}")


def write_html(reports: Sequence[Mapping[str, Any]], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    target = out / INDEX
    atomic_write_bytes(target, render(reports, _media(reports, out)).encode())
    return target
