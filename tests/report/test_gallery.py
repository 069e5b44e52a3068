"""The dense-grid gallery: every stored sheet with its prompt, links relative to the page."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

from pytest_imagetime.report.gallery import GALLERY, gallery_records, render_gallery, write_gallery


def _sheet(images: Path, case_id: str, png: bool = True, **record: object) -> None:
    images.mkdir(parents=True, exist_ok=True)
    (images / f"{case_id}.json").write_text(json.dumps({"case_id": case_id, **record}))
    if png:
        Image.new("RGB", (4, 4)).save(images / f"{case_id}.png")


def test_records_need_their_image_and_a_readable_file(tmp_path: Path) -> None:
    images = tmp_path / "images"
    _sheet(images, "b-case", seed=2)
    _sheet(images, "a-case", seed=1)
    _sheet(images, "no-image", png=False)
    (images / "broken.json").write_text("{not json")
    Image.new("RGB", (4, 4)).save(images / "broken.png")
    (images / "list.json").write_text("[1, 2]")
    Image.new("RGB", (4, 4)).save(images / "list.png")
    assert [r["case_id"] for r in gallery_records(images)] == ["a-case", "b-case"]
    assert gallery_records(tmp_path / "missing") == []


def test_the_page_escapes_what_the_records_hold() -> None:
    records = [{"case_id": "x<y", "seed": 7, "seconds": 1.26, "prompt": "a & b <panel>"}]
    text = render_gallery("Run <1>", records, lambda case_id: f"images/{case_id}.png")
    assert "<title>Run &lt;1&gt;</title>" in text
    assert 'id="x&lt;y"' in text
    assert 'src="images/x%3Cy.png"' in text
    assert "seed 7 · 1.3 s" in text
    assert "<pre>a &amp; b &lt;panel&gt;</pre>" in text
    assert "1 sheets." in text


def test_missing_fields_read_as_unknown() -> None:
    text = render_gallery("t", [{"seconds": "slow"}], lambda case_id: f"{case_id}.png")
    assert "<b>?</b>" in text and "seed ?" in text and " s<" not in text


def test_a_run_without_sheets_writes_nothing(tmp_path: Path) -> None:
    assert write_gallery(tmp_path, "empty") is None
    assert not (tmp_path / GALLERY).exists()


def test_the_gallery_links_images_relative_to_where_it_is_written(tmp_path: Path) -> None:
    model_dir = tmp_path / "procedural" / "pixel"
    _sheet(model_dir / "images", "kitchen-pour-water-1", seed=3)
    written = write_gallery(model_dir, "procedural")
    assert written == model_dir / GALLERY
    assert 'src="images/kitchen-pour-water-1.png"' in written.read_text()
    elsewhere = tmp_path / "site" / "page.html"
    elsewhere.parent.mkdir()
    assert write_gallery(model_dir, "procedural", elsewhere) == elsewhere
    assert 'src="../procedural/pixel/images/kitchen-pour-water-1.png"' in elsewhere.read_text()
