"""The TempViz HTML page: accuracy per category and run, one card per item, thumbnails."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from PIL import Image

from pytest_imagetime.tempviz.html import INDEX, MEDIA, THUMB_PX, figure, render, write_html
from pytest_imagetime.tempviz.record import TempvizRecord
from pytest_imagetime.tempviz.report import build_report


def _record(index: str, category: str = "Maps", status: str = "passed", **values: Any
            ) -> TempvizRecord:
    answers = {"passed": ("yes", "yes", "yes"), "failed": ("yes", "no", "yes"),
               "error": (None, None, None)}[status]
    record = TempvizRecord(key=f"{category}-{index}[procedural]", id=f"{category}-{index}",
                           category=category, index=index, promptcategory="city",
                           difficulty="1", prompt=f"a <map> {index}", model="procedural",
                           judge="j", run_dir="out", status=status, q1=answers[0],
                           q2=answers[1], q3=answers[2])
    return replace(record, **values)


def _report(records: list[TempvizRecord], spec: str = "procedural") -> dict[str, Any]:
    manifest = {"model": {"spec": spec}, "judge": {"name": "judge-simple"}}
    return build_report(manifest, records, "2026-01-01T00:00:00+00:00")


def test_the_figure_has_the_categories_present_and_all(tmp_path: Path) -> None:
    report = _report([_record("0"), _record("1", status="failed"), _record("2", "Animals")])
    table = figure([report, _report([_record("0")], "other")])
    assert "<th>procedural | judge-simple</th><th>other | judge-simple</th>" in table
    assert table.index(">Animals<") < table.index(">Maps<") < table.index(">all<")
    assert ">Buildings<" not in table
    assert "Q2 the subject is present" in table
    assert "<td>3 / 3</td><td>1 / 1</td>" in table
    assert "<td>66.7</td>" in table  # q2 overall: two yes of three
    assert "<td>–</td>" in table  # the other run has no Animals


def test_cards_show_answers_errors_and_analyses(tmp_path: Path) -> None:
    judgment = tmp_path / "Maps-1.json"
    judgment.write_text(json.dumps({"answers": {"q2": {"answer": "no",
                                                       "analysis": "no <street> names"}}}))
    records = [_record("1", status="failed", judgment=str(judgment)),
               _record("2", status="error", error="model <failed>")]
    page = render([_report(records)], {})
    assert page.count('<div class="muted">no image</div>') == 2
    assert '<span class="no">no</span> <span class="muted">no &lt;street&gt; names</span>' in page
    assert '<p class="reason">model &lt;failed&gt;</p>' in page
    assert "<p>a &lt;map&gt; 1</p>" in page
    assert "2 items, 0 passed, 1 failed, 1 errors" in page


def test_thumbnails_are_made_once_and_unreadable_images_left_out(tmp_path: Path) -> None:
    good = tmp_path / "images" / "Maps-0.png"
    good.parent.mkdir()
    Image.new("RGB", (1024, 512), (10, 200, 30)).save(good)
    broken = tmp_path / "images" / "Maps-1.png"
    broken.write_bytes(b"not a png")
    records = [_record("0", image=str(good)), _record("1", image=str(broken)),
               _record("2", image=str(tmp_path / "gone.png"))]
    out = tmp_path / "html"
    assert write_html([_report(records)], out) == out / INDEX
    thumb = out / MEDIA / "procedural" / "Maps-0.jpg"
    with Image.open(thumb) as small:
        assert small.format == "JPEG" and max(small.size) == THUMB_PX
    page = (out / INDEX).read_text()
    assert f'src="{MEDIA}/procedural/Maps-0.jpg"' in page
    assert page.count("no image") == 2
    stamp = thumb.stat().st_mtime_ns - 10**9
    os.utime(thumb, ns=(stamp, stamp))
    os.utime(good, ns=(stamp - 10**9, stamp - 10**9))
    write_html([_report(records)], out)
    assert thumb.stat().st_mtime_ns == stamp  # not made again: the image is older
