"""``imagetime label import``: filled answer files read back into one checked label table.

Every answer is checked (a yes/no, a yes/no/unsure, an integer 0-10), every case id must be
a known case and every answered predicate one of that case's predicates. Questions an item
does not have ("n/a") and unanswered ones become empty cells, which agreement statistics
leave out. Items with no answer at all are skipped and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ...cases.model import Case
from ...rubric.facts import C_DIMS
from ..agreement.tables import TableError, read_table
from .columns import HEAD, NOT_ASKED, PREDICATE_ANSWERS, SHEET_ANSWERS, TAIL, answer, rating


@dataclass
class Imported:
    rows: list[dict[str, str]] = field(default_factory=list)
    predicates: set[str] = field(default_factory=set)
    skipped: int = 0  # rows without a single answer
    problems: list[str] = field(default_factory=list)


def _blank(value: str) -> bool:
    return value.strip().lower() in ("", NOT_ASKED)


def _row(raw: dict[str, str], case: Case, where: str, problems: list[str]) -> dict[str, str]:
    """The row's answers in their one spelling; problems are appended with ``where``."""
    out = {"valid_sheet": ""}
    if not _blank(raw.get("valid_sheet", "")):
        value = answer(raw["valid_sheet"], SHEET_ANSWERS)
        if value is None:
            problems.append(f"{where}: valid_sheet {raw['valid_sheet']!r} is not yes or no")
        out["valid_sheet"] = value or ""
    own = {p.id for p in case.predicates}
    for column, text in raw.items():
        if column in HEAD or column in TAIL or _blank(text):
            continue
        if column not in own:
            problems.append(f"{where}: case {case.id} has no predicate {column!r} "
                            f"(its predicates: {', '.join(sorted(own))})")
            continue
        value = answer(text, PREDICATE_ANSWERS)
        if value is None:
            problems.append(f"{where}: {column} {text!r} is not yes, no or unsure")
        out[column] = value or ""
    for dim in C_DIMS:
        text = raw.get(dim, "")
        if _blank(text):
            out[dim] = ""
            continue
        score = rating(text)
        if score is None:
            problems.append(f"{where}: {dim} {text!r} is not an integer from 0 to 10")
        out[dim] = "" if score is None else str(score)
    return out


def import_answers(paths: Sequence[Path], cases: dict[str, Case],
                   annotator: str | None = None) -> Imported:
    """Answers from the form's CSV downloads (or items.csv filled in by hand).

    ``annotator`` keeps only that annotator's rows: one table per annotator is what
    inter-annotator agreement, and agreement of one person with the judge, take.
    """
    result = Imported()
    seen: dict[tuple[str, str, str], str] = {}
    for path in paths:
        try:
            table = read_table(path)
            table.require("model", "case_id", "annotator")
        except TableError as exc:
            result.problems.append(str(exc))
            continue
        for raw, line in zip(table.rows, table.lines, strict=True):
            where = f"{path}:{line}"
            who = raw["annotator"]
            if annotator is not None and who != annotator:
                continue
            case = cases.get(raw["case_id"])
            if case is None:
                result.problems.append(f"{where}: unknown case id {raw['case_id']!r}")
                continue
            answers = _row(dict(raw), case, where, result.problems)
            if not any(answers.values()):
                result.skipped += 1
                continue
            if not who:
                result.problems.append(f"{where}: no annotator name")
                continue
            key = (raw["model"], raw["case_id"], who)
            if key in seen:
                result.problems.append(f"{where}: {who} answered {raw['model']} / "
                                       f"{raw['case_id']} already at {seen[key]}")
                continue
            seen[key] = where
            result.predicates.update(p.id for p in case.predicates)
            result.rows.append({"item": raw.get("item", ""), "model": raw["model"],
                                "case_id": raw["case_id"],
                                "domain": raw.get("domain") or case.domain, "annotator": who,
                                "notes": raw.get("notes", ""), **answers})
    return result
