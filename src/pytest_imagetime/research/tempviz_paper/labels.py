"""Human labels and method outputs for TempViz, keyed by (model, category, index).

The paper scores every automatic method against one human label, the combined label
"the full prompt is shown": Q2 (subject present) AND Q3 (temporal knowledge applied). A judge
is asked ONE whole-prompt question and its answer is that method's prediction. The suite's
``answers.csv`` asks the tables' ``annotation_prompt_2`` as its q3; that question is the
paper's whole-prompt question ("Is the image correct for the following prompt: ...? Is the
correct temporal knowledge applied ...?"), so its q3 answer is the whole-prompt prediction.

Tables are CSV or JSON Lines. A row is keyed by ``model`` (left out of the key when either
table has no such column), ``category`` and ``index``, or by an ``id``/``case_id`` of the form
``<Category>-<index>`` when those columns are missing (the tables of ``imagetime baseline``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..agreement.tables import FALSE_WORDS, TRUE_WORDS, Table, TableError, read_table

Key = tuple[str, ...]
HUMAN_QUESTIONS = ("q1", "q2", "q3")
COMBINED = "q2_and_q3"
TARGETS = (*HUMAN_QUESTIONS, COMBINED)
# Columns that hold a method's one whole-prompt answer, in the order they are looked for.
WHOLE_PROMPT_COLUMNS = ("prediction", "q3")
SETTINGS = ("paper", "per-question")


@dataclass(frozen=True)
class Keyed:
    table: Table
    rows: Mapping[Key, Mapping[str, str]]
    with_model: bool


def yes_no(value: str) -> bool | None:
    """yes/true/1 and no/false/0 (any case); None for an empty or other cell."""
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    return None


def combined(row: Mapping[str, str]) -> bool | None:
    """Q2 AND Q3: a "no" on either is no; unknown only when neither says no."""
    q2, q3 = yes_no(row.get("q2", "")), yes_no(row.get("q3", ""))
    if q2 is False or q3 is False:
        return False
    if q2 is None or q3 is None:
        return None
    return True


def label(row: Mapping[str, str], name: str) -> bool | None:
    """A yes/no label of a row: q1..q3, the combined label (from its column or from q2 and
    q3) or any yes/no column."""
    if name == COMBINED and not row.get(COMBINED, ""):
        return combined(row)
    return yes_no(row.get(name, ""))


def _category_index(row: Mapping[str, str], where: str) -> tuple[str, str]:
    if row.get("category") and row.get("index"):
        return row["category"], row["index"]
    ident = row.get("id") or row.get("case_id") or ""
    category, dash, index = ident.rpartition("-")
    if not dash or not category or not index:
        raise TableError(f"{where}: no category and index, and no id of the form "
                         f"<Category>-<index> (got {ident!r})")
    return category, index


def read_keyed(path: Path, with_model: bool = True) -> Keyed:
    """A table keyed by (model, category, index); TableError on a repeated key."""
    table = read_table(path)
    keep_model = with_model and "model" in table.columns
    rows: dict[Key, Mapping[str, str]] = {}
    first: dict[Key, int] = {}
    for row, line in zip(table.rows, table.lines, strict=True):
        where = f"{path}:{line}"
        key: Key = _category_index(row, where)
        if keep_model:
            key = (row["model"], *key)
        if key in first:
            raise TableError(f"{where}: {'/'.join(key)} again (first on line {first[key]})")
        first[key] = line
        rows[key] = row
    return Keyed(table, rows, keep_model)


def read_pair(human: Path, method: Path) -> tuple[Keyed, Keyed]:
    """Both tables, keyed alike: by model only when both have a model column."""
    both = "model" in read_table(human).columns and "model" in read_table(method).columns
    return read_keyed(human, both), read_keyed(method, both)


def whole_prompt_column(table: Table) -> str:
    for column in WHOLE_PROMPT_COLUMNS:
        if column in table.columns:
            return column
    raise TableError(f"{table.path}: no whole-prompt answer: expected a column "
                     f"{' or '.join(map(repr, WHOLE_PROMPT_COLUMNS))} "
                     f"(columns: {', '.join(table.columns)})")


@dataclass(frozen=True)
class Pairs:
    """Matched (human, method) values with each item's category."""

    categories: tuple[str, ...]
    human: tuple[bool, ...]
    method: tuple[str, ...]  # the method's cell: yes/no or a number
    unmatched: int  # human rows with no method row
    missing: int  # matched rows with an empty label on either side


def pair_up(human: Keyed, method: Keyed, target: str, column: str,
            method_label: str | None = None) -> Pairs:
    """Each human row's ``target`` label with the method's ``column`` cell; rows with an
    empty cell on either side are counted, not used."""
    categories: list[str] = []
    truth: list[bool] = []
    cells: list[str] = []
    unmatched = missing = 0
    for key, row in human.rows.items():
        other = method.rows.get(key)
        if other is None:
            unmatched += 1
            continue
        expected = label(row, target)
        cell = other.get(column, "")
        if method_label is not None:
            decided = label(other, method_label)
            cell = "" if decided is None else ("yes" if decided else "no")
        if expected is None or not cell:
            missing += 1
            continue
        categories.append(key[-2])
        truth.append(expected)
        cells.append(cell)
    return Pairs(tuple(categories), tuple(truth), tuple(cells), unmatched, missing)


def require_labels(table: Table, names: Sequence[str]) -> None:
    for name in names:
        if name == COMBINED and COMBINED not in table.columns:
            table.require("q2", "q3")
        else:
            table.require(name)
