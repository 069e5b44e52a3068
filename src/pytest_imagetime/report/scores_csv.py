"""What a run keeps beside ``report.json`` for its readers: the analysis table and the
judge's prompt.

The analysis table has one row per sheet, as the benchmark releases its scores: case, model,
setting, judge, status, the C scores with the judge's confidences, the D scores, the means
and Overall. A null score is an empty cell, never 0; an item that errored has no scores.
The judge's prompt is kept as text (``judge_prompt.txt``), not only as a version name, for
judges that have one.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..rubric.facts import C_DIMS, D_DIMS
from ..store.atomic import atomic_write_text

SCORES_CSV = "scores.csv"
JUDGE_PROMPT = "judge_prompt.txt"
COLUMNS: tuple[str, ...] = (
    "case_id", "model", "setting", "judge", "judge_model", "domain", "difficulty", "status",
    *C_DIMS, *(f"{d}_confidence" for d in C_DIMS), *D_DIMS, "c_mean", "d_mean", "overall",
)


def _cell(value: Any) -> Any:
    return "" if value is None else round(value, 4) if isinstance(value, float) else value


def score_rows(items: Iterable[Mapping[str, Any]]) -> Iterator[list[Any]]:
    """The table's rows (without the header), one per report item, in the items' order."""
    for item in items:
        scores = item.get("scores") or {}
        confidence = item.get("confidence") or {}
        yield [_cell(v) for v in (
            item["case_id"], item["model"], item["setting"], item["judge"],
            item.get("judge_model"), item["domain"], item["difficulty"], item["status"],
            *(scores.get(d) for d in C_DIMS), *(confidence.get(d) for d in C_DIMS),
            *(scores.get(d) for d in D_DIMS), item.get("c_mean"), item.get("d_mean"),
            item.get("overall"))]


def write_scores_csv(path: Path, items: Iterable[Mapping[str, Any]]) -> None:
    atomic_write_text(path, _chunks(items))


def _chunks(items: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in score_rows(items):
        writer.writerow(row)
        if buffer.tell() > 1 << 16:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()


def write_run_records(run_dir: Path, judge: object, items: Iterable[Mapping[str, Any]]) -> None:
    """The analysis table, and the judge's prompt text when the judge has one."""
    write_scores_csv(run_dir / SCORES_CSV, items)
    template = getattr(judge, "prompt_template", None)
    if callable(template):
        atomic_write_text(run_dir / JUDGE_PROMPT, [str(template())])
