"""The TempViz report of one run (one model x one judge): JSON, and the answers as CSV.

Accuracy is the share of "yes" among the items the judge answered (errors are counted, not
scored), per question, per category, prompt category and difficulty, and for the combined
label Q2 and Q3 (the subject is present and its time is right). An item passes when all
three answers are yes. The JSON Schema ships as ``schemas/tempviz_report.schema.json``.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..schema_files import validate_against
from ..store.atomic import atomic_write_bytes, atomic_write_json
from .names import CATEGORIES
from .prompts import QUESTIONS
from .record import TempvizRecord

REPORT_FORMAT = "imagetime-tempviz-report/1"
COMBINED = "q2_and_q3"
LABELS: tuple[str, ...] = (*QUESTIONS, COMBINED)
ANSWER_COLUMNS: tuple[str, ...] = ("model", "judge", "id", "category", "index",
                                   "promptcategory", "difficulty", "status", *LABELS)


def validate_report(report: Mapping[str, Any]) -> None:
    """Raise jsonschema.ValidationError when the report does not match its schema."""
    validate_against("tempviz_report", report)


def combined(record: TempvizRecord) -> str | None:
    if record.q2 is None or record.q3 is None:
        return None
    return "yes" if record.q2 == record.q3 == "yes" else "no"


def label(record: TempvizRecord, name: str) -> str | None:
    return combined(record) if name == COMBINED else record.answers[name]


def _share(values: Sequence[bool]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def stats(records: Sequence[TempvizRecord]) -> dict[str, Any]:
    answered = [r for r in records if r.status in ("passed", "failed")]
    accuracy = {}
    for name in LABELS:
        given = [label(r, name) for r in answered]
        accuracy[name] = _share([v == "yes" for v in given if v is not None])
    passed = sum(r.status == "passed" for r in records)
    return {
        "n": len(records), "answered": len(answered), "passed": passed,
        "failed": sum(r.status == "failed" for r in records),
        "errors": sum(r.status == "error" for r in records),
        "pass_rate": _share([r.status == "passed" for r in answered]),
        "accuracy": accuracy,
        "cost_usd": round(sum(r.cost_usd for r in answered), 6),
        "spent_usd": round(sum(r.cost_usd for r in records if r.judged), 6),
    }


def _grouped(records: Iterable[TempvizRecord], key: Callable[[TempvizRecord], str]
             ) -> dict[str, list[TempvizRecord]]:
    groups: dict[str, list[TempvizRecord]] = {}
    for record in records:
        groups.setdefault(key(record), []).append(record)
    return dict(sorted(groups.items(), key=lambda kv: _natural(kv[0])))


def _natural(text: str) -> tuple[int, str]:
    return (int(text), "") if text.isdigit() else (1 << 62, text)


def sort_key(record: TempvizRecord) -> tuple[int, tuple[int, str], str]:
    order = CATEGORIES.index(record.category) if record.category in CATEGORIES else 99
    return order, _natural(record.index), record.model


def _item(record: TempvizRecord) -> dict[str, Any]:
    return {
        "id": record.id, "category": record.category, "index": record.index,
        "promptcategory": record.promptcategory, "difficulty": record.difficulty,
        "prompt": record.prompt, "status": record.status, "error": record.error,
        "answers": record.answers, COMBINED: combined(record),
        "image": record.image, "image_sha256": record.image_sha256,
        "judgment": record.judgment, "judge_model": record.judge_model,
        "cost_usd": record.cost_usd, "tokens_in": record.tokens_in,
        "tokens_out": record.tokens_out, "generation_s": record.generation_s,
        "judge_s": record.judge_s, "generated": record.generated, "judged": record.judged,
    }


def build_report(manifest: Mapping[str, Any], records: Sequence[TempvizRecord],
                 created: str) -> dict[str, Any]:
    ordered = sorted(records, key=sort_key)
    by_category = _grouped(ordered, lambda r: r.category)
    return {
        "format": REPORT_FORMAT, "created": created, "plugin_version": __version__,
        "manifest": dict(manifest),
        "summary": stats(ordered),
        "by_category": {c: stats(rs) for c, rs in by_category.items()},
        "by_prompt_category": {
            c: {p: stats(g) for p, g in _grouped(rs, lambda r: r.promptcategory).items()}
            for c, rs in by_category.items()},
        "by_difficulty": {d: stats(g) for d, g in
                          _grouped(ordered, lambda r: r.difficulty).items()},
        "items": [_item(r) for r in ordered],
    }


def write_report(path: Path, report: Mapping[str, Any]) -> None:
    validate_report(report)  # a report that breaks its own schema is a bug: fail loudly
    atomic_write_json(path, report)


def answers_csv(records: Sequence[TempvizRecord]) -> str:
    """One row per item: the judge's yes/no answers, empty where it gave none, ready for
    ``imagetime agree human.csv answers.csv --on category,index --label q3``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(ANSWER_COLUMNS)
    for r in sorted(records, key=sort_key):
        writer.writerow([r.model, r.judge, r.id, r.category, r.index, r.promptcategory,
                         r.difficulty, r.status, *(label(r, n) or "" for n in LABELS)])
    return buffer.getvalue()


def write_answers(path: Path, records: Sequence[TempvizRecord]) -> None:
    atomic_write_bytes(path, answers_csv(records).encode())


def summary_lines(reports: Sequence[Mapping[str, Any]]) -> list[str]:
    """Terminal lines: one per run, then its accuracy per category (the paper's figure 2)."""
    lines = []
    for report in reports:
        manifest, summary = report["manifest"], report["summary"]
        config = manifest["judge"].get("config") or {}
        # A judge model of no price has an unknown cost, never $0.
        unknown = "price_usd_per_mtok" in config and config["price_usd_per_mtok"] is None
        cost = "unknown" if unknown else f"${summary['cost_usd']:.4f}"
        lines.append(f"{manifest['model']['spec']} | {manifest['judge']['name']}: "
                     f"{summary['n']} items, {_pct(summary['pass_rate'])} pass, "
                     f"{summary['errors']} errors, judge cost {cost}")
        lines.append("  " + f"{'':<11}" + "".join(f"{n.upper():>10}" for n in LABELS))
        rows = [*report["by_category"].items(), ("all", summary)]
        for name, entry in rows:
            cells = "".join(f"{_pct(entry['accuracy'][n]):>10}" for n in LABELS)
            lines.append(f"  {name:<11}{cells}")
    return lines


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"
