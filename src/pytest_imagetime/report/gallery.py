"""The dense-grid gallery: every 4xN sheet of a run with its prompt, no scores.

Dense grids are qualitative (the benchmark scores 2x2 sheets only), so their report is a
page to look at: ``<run>/gallery.html`` beside ``images/``, built from the stored generation
records, so it also covers sheets drawn by other workers or earlier sessions.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..store.atomic import atomic_write_bytes, read_json
from .html import esc, page, url

GALLERY = "gallery.html"
CSS = """
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr));
        gap: 1rem; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: .5rem; }
figure img { width: 100%; height: auto; display: block; }
figcaption { margin-top: .4rem; }
details pre { white-space: pre-wrap; font-size: 12px; }
"""


def gallery_records(images_dir: Path) -> list[dict[str, Any]]:
    """The generation records of a run's stored sheets whose image file is there."""
    records = []
    for path in sorted(images_dir.glob("*.json")):
        record = read_json(path)
        if isinstance(record, dict) and path.with_suffix(".png").is_file():
            records.append(record)
    return records


def render_gallery(title: str, records: list[dict[str, Any]], image_href: Any) -> str:
    figures = []
    for record in records:
        case_id = str(record.get("case_id", "?"))
        seconds = record.get("seconds")
        timing = f" · {seconds:.1f} s" if isinstance(seconds, (int, float)) else ""
        figures.append(
            f'<figure id="{esc(case_id)}"><a href="{url(image_href(case_id))}">'
            f'<img loading="lazy" src="{url(image_href(case_id))}" alt="{esc(case_id)}"></a>'
            f"<figcaption><b>{esc(case_id)}</b><span class=muted> · seed "
            f"{esc(record.get('seed', '?'))}{esc(timing)}</span>"
            f"<details><summary>prompt</summary><pre>{esc(record.get('prompt', ''))}</pre>"
            f"</details></figcaption></figure>")
    body = (f"<h1>{esc(title)}</h1><p class=muted>Dense grids are qualitative: shown, not "
            f"scored. {len(records)} sheets.</p><style>{CSS}</style>"
            f"<div class=grid>{''.join(figures)}</div>")
    return page(title, body)


def write_gallery(model_dir: Path, title: str, target: Path | None = None) -> Path | None:
    """Write the gallery of ``model_dir`` to ``target`` (default: ``model_dir/gallery.html``);
    None when the run has no sheet yet."""
    images = model_dir / "images"
    records = gallery_records(images)
    if not records:
        return None
    target = target or model_dir / GALLERY
    relative = os.path.relpath(images, target.parent)
    text = render_gallery(title, records,
                          lambda case_id: f"{Path(relative).as_posix()}/{case_id}.png")
    atomic_write_bytes(target, text.encode())
    return target
