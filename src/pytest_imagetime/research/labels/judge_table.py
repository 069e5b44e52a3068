"""``imagetime label judge``: a judge's stored answers in the columns people fill in.

valid_sheet is the judge's gate (a usable 2x2 sheet), each predicate column its verdict
(unsure where it gave none), C0-C9 its scores. The annotator column names the judge, so a
table may hold several judges of the same items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ...rubric.facts import C_DIMS
from .columns import HEAD, TAIL
from .runs import RunError, RunItem


@dataclass
class JudgeTable:
    rows: list[dict[str, str]] = field(default_factory=list)
    predicates: set[str] = field(default_factory=set)
    without_verdicts: int = 0  # items whose judge gave no per-predicate verdicts


def _yes_no(value: object) -> str:
    if value is None:
        return ""
    return "yes" if value else "no"


def judge_rows(items: Sequence[RunItem]) -> JudgeTable:
    table = JudgeTable()
    seen: dict[tuple[str, str, str], RunItem] = {}
    for item in items:
        key = (item.model, item.case_id, item.judge)
        if key in seen:
            raise RunError(f"{item.case_id} of {item.model} judged by {item.judge} in both "
                           f"{seen[key].run_dir} and {item.run_dir}")
        seen[key] = item
        scores = item.data.get("scores") or {}
        row = {"item": "", "model": item.model, "case_id": item.case_id,
               "domain": item.domain, "annotator": item.judge,
               "valid_sheet": _yes_no(item.data.get("gate_pass")), "notes": ""}
        row.update({d: "" if scores.get(d) is None else str(scores[d]) for d in C_DIMS})
        judgment = item.judgment() if item.data.get("predicates_checked") else None
        if judgment is not None and judgment.get("evaluates_predicates"):
            for verdict in judgment.get("predicates") or ():
                pid, value = str(verdict["id"]), verdict.get("value")
                if pid in HEAD or pid in TAIL:
                    continue  # an id that names a fixed column cannot be told apart from it
                row[pid] = "unsure" if value is None else _yes_no(value)
                table.predicates.add(pid)
        else:
            table.without_verdicts += 1
        table.rows.append(row)
    return table
