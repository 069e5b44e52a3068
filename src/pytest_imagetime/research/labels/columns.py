"""The columns every label table shares, whoever answered: a person through the form, or a
judge through its stored judgments. Equal columns are what lets ``imagetime agree`` join them.

Wide tables hold one row per item and annotator::

    item, model, case_id, domain, annotator, valid_sheet, <predicate ids>, C0..C9, notes

Long tables hold one row per predicate answer, so that all predicates pool into one
agreement figure::

    model, case_id, domain, annotator, predicate, satisfied
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ...rubric.facts import C_DIMS, SCORE_MAX, SCORE_MIN

KEYS = ("model", "case_id", "annotator")
HEAD = ("item", "model", "case_id", "domain", "annotator", "valid_sheet")
TAIL = (*C_DIMS, "notes")
LONG = ("model", "case_id", "domain", "annotator", "predicate", "satisfied")
FORMATS = ("wide", "long")
NOT_ASKED = "n/a"  # a question the item does not have (no such predicate, a null dimension)
SHEET_ANSWERS = ("yes", "no")
PREDICATE_ANSWERS = ("yes", "no", "unsure")
_YES = frozenset({"yes", "y", "true", "1"})
_NO = frozenset({"no", "n", "false", "0"})


def _natural(text: str) -> tuple[object, ...]:
    """p2 before p10."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def predicate_columns(ids: Iterable[str]) -> list[str]:
    return sorted(set(ids), key=_natural)


def wide_columns(predicates: Iterable[str]) -> list[str]:
    return [*HEAD, *predicate_columns(predicates), *TAIL]


def answer(value: str, allowed: Sequence[str]) -> str | None:
    """A yes/no(/unsure) answer in its one spelling; None when it is not one."""
    word = value.strip().lower()
    if word in _YES:
        word = "yes"
    elif word in _NO:
        word = "no"
    return word if word in allowed else None


def rating(value: str) -> int | None:
    """A 0-10 rating, or None when the text is not one."""
    try:
        number = int(value.strip())
    except ValueError:
        return None
    return number if SCORE_MIN <= number <= SCORE_MAX else None


def long_rows(row: Mapping[str, str], predicates: Iterable[str]) -> list[dict[str, str]]:
    """One wide row as long rows: the predicates it answers or leaves open, never n/a."""
    return [{"model": row["model"], "case_id": row["case_id"], "domain": row["domain"],
             "annotator": row["annotator"], "predicate": p, "satisfied": row.get(p, "")}
            for p in predicate_columns(predicates) if row.get(p, "") != NOT_ASKED]


def write_csv(path: Path, columns: Sequence[str], rows: Iterable[Mapping[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: row.get(c, "") for c in columns})


def write_table(path: Path, rows: Sequence[Mapping[str, str]], predicates: Iterable[str],
                fmt: str) -> None:
    """Rows of the wide layout written wide or long."""
    ids = predicate_columns(predicates)
    if fmt == "long":
        write_csv(path, LONG, [r for row in rows for r in long_rows(row, ids)])
    else:
        write_csv(path, wide_columns(ids), rows)
