"""Label tables (CSV or JSONL) read, joined on key columns, and typed for the statistics.

Every problem with the input is a ``TableError`` whose message fits on one line and names
the file, the line or the column, so the command can print it and exit 2.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

LabelType = Literal["categorical", "ordinal", "continuous"]
LABEL_TYPES: tuple[LabelType, ...] = ("categorical", "ordinal", "continuous")
TRUE_WORDS = frozenset({"yes", "true", "1"})
FALSE_WORDS = frozenset({"no", "false", "0"})
ORDINAL_LO, ORDINAL_HI = 0, 10
JSONL_SUFFIXES = (".jsonl", ".ndjson")
SHOWN_KEYS = 5  # unmatched keys printed and put in the JSON


class TableError(ValueError):
    """Bad input: a missing file or column, an unreadable line, a duplicate key."""


@dataclass(frozen=True)
class Table:
    path: Path
    columns: tuple[str, ...]
    rows: tuple[Mapping[str, str], ...]  # every value a stripped string, "" when missing
    lines: tuple[int, ...]  # the line each row starts on, for messages

    def require(self, *names: str) -> None:
        missing = [n for n in names if n not in self.columns]
        if missing:
            raise TableError(f"{self.path}: no column {', '.join(map(repr, missing))} "
                             f"(columns: {', '.join(self.columns) or 'none'})")


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # 7.0 from a JSON writer is the score 7
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value).strip()


def read_table(path: Path) -> Table:
    """A CSV file, or JSON Lines when the name ends in .jsonl or .ndjson."""
    try:
        # Bytes, not read_text: newline translation would turn a \r inside a quoted cell
        # into \n. utf-8-sig: spreadsheets write a byte order mark.
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise TableError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TableError(f"{path}: cannot read: {exc}") from None
    if path.suffix.lower() in JSONL_SUFFIXES:
        return _read_jsonl(path, text)
    return _read_csv(path, text)


def _read_csv(path: Path, text: str) -> Table:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None or not any(h.strip() for h in header):
            raise TableError(f"{path}: empty file, expected a header line")
        columns = tuple(h.strip() for h in header)
        doubled = sorted({c for c in columns if columns.count(c) > 1})
        if doubled:
            raise TableError(f"{path}: line 1: column {doubled[0]!r} appears twice")
        rows, lines = [], []
        start = reader.line_num + 1
        for record in reader:
            if record and any(v.strip() for v in record):
                if len(record) != len(columns):
                    raise TableError(f"{path}: line {start}: {len(record)} fields, the "
                                     f"header has {len(columns)}")
                rows.append({c: v.strip() for c, v in zip(columns, record, strict=True)})
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise TableError(f"{path}: line {reader.line_num}: unreadable CSV: {exc}") from None
    return Table(path, columns, tuple(rows), tuple(lines))


def _read_jsonl(path: Path, text: str) -> Table:
    columns: dict[str, None] = {}  # first-seen order
    rows, lines = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise TableError(f"{path}: line {number}: not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise TableError(f"{path}: line {number}: expected a JSON object, found "
                             f"{type(data).__name__}")
        columns.update(dict.fromkeys(data))
        rows.append({str(k): _cell(v) for k, v in data.items()})
        lines.append(number)
    if not rows:
        raise TableError(f"{path}: no JSON objects")
    names = tuple(columns)
    return Table(path, names, tuple({c: r.get(c, "") for c in names} for r in rows),
                 tuple(lines))


# ---------------------------------------------------------------- joining

Key = tuple[str, ...]


def index_rows(table: Table, keys: Sequence[str]) -> dict[Key, Mapping[str, str]]:
    """Rows by their key; a key seen twice is an error naming both lines."""
    table.require(*keys)
    found: dict[Key, Mapping[str, str]] = {}
    first_line: dict[Key, int] = {}
    for row, line in zip(table.rows, table.lines, strict=True):
        key = tuple(row[k] for k in keys)
        if key in found:
            raise TableError(f"{table.path}: duplicate key {describe_key(keys, key)} (lines "
                             f"{first_line[key]} and {line})")
        found[key] = row
        first_line[key] = line
    return found


def describe_key(keys: Sequence[str], key: Key) -> str:
    return ", ".join(f"{k}={v}" for k, v in zip(keys, key, strict=True))


@dataclass(frozen=True)
class Pair:
    group: str
    a: str
    b: str


@dataclass
class Joined:
    """Matched label pairs (both present), with what was left out and why."""

    pairs: list[Pair] = field(default_factory=list)
    missing: dict[str, int] = field(default_factory=dict)  # group -> pairs with an empty label
    unmatched_a: list[Key] = field(default_factory=list)
    unmatched_b: list[Key] = field(default_factory=list)


def join(a: Table, b: Table, keys: Sequence[str], label_a: str, label_b: str,
         by: str | None = None) -> Joined:
    a.require(*keys, label_a)  # every column first: a missing one explains more than duplicates
    b.require(*keys, label_b)
    if by is not None and by not in a.columns and by not in b.columns:
        raise TableError(f"no column {by!r} for --by in {a.path} or {b.path} (columns: "
                         f"{', '.join(dict.fromkeys((*a.columns, *b.columns)))})")
    rows_a, rows_b = index_rows(a, keys), index_rows(b, keys)
    joined = Joined(unmatched_a=[k for k in rows_a if k not in rows_b],
                    unmatched_b=[k for k in rows_b if k not in rows_a])
    for key, row_a in rows_a.items():
        row_b = rows_b.get(key)
        if row_b is None:
            continue
        group = ""
        if by is not None:  # A's column when it has one: A is the reference side
            group = row_a[by] if by in a.columns else row_b[by]
        if row_a[label_a] and row_b[label_b]:
            joined.pairs.append(Pair(group, row_a[label_a], row_b[label_b]))
        else:
            joined.missing[group] = joined.missing.get(group, 0) + 1
    return joined


# ---------------------------------------------------------------- label types

Kind = Literal["binary", "ordinal", "numeric", "text"]


def _number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def value_kind(values: Iterable[str]) -> Kind:
    """What one side's labels look like: yes/no, integer scores 0-10, numbers, or text."""
    seen = [v.strip().lower() for v in values]
    if all(v in TRUE_WORDS or v in FALSE_WORDS for v in seen):
        return "binary"
    numbers = [_number(v) for v in seen]
    if any(n is None for n in numbers):
        return "text"
    if all(n is not None and n.is_integer() and ORDINAL_LO <= n <= ORDINAL_HI for n in numbers):
        return "ordinal"
    return "numeric"


@dataclass(frozen=True)
class Typing:
    """How a pair of label columns is compared."""

    type: LabelType
    binary_side: Literal["a", "b"] | None = None  # set for continuous vs binary


def detect_type(a: Sequence[str], b: Sequence[str], forced: LabelType | None = None) -> Typing:
    """The comparison the two columns support, or the one forced with --type.

    yes/no on both sides is categorical; integer scores 0-10 on both sides are ordinal; a
    number against yes/no is continuous with a point-biserial correlation; other numbers are
    continuous; any other text makes the labels categorical.
    """
    kind_a, kind_b = value_kind(a), value_kind(b)
    numeric = ("ordinal", "numeric")
    side: Literal["a", "b"] | None = None
    if kind_a == "binary" and kind_b in numeric:
        side = "a"
    elif kind_b == "binary" and kind_a in numeric:
        side = "b"
    if forced is not None:
        if forced == "categorical":
            return Typing("categorical")
        _check_numbers(a, "A", integers=forced == "ordinal")
        _check_numbers(b, "B", integers=forced == "ordinal")
        return Typing(forced, side if forced == "continuous" else None)
    if side is not None:
        return Typing("continuous", side)
    if "text" in (kind_a, kind_b) or (kind_a, kind_b) == ("binary", "binary"):
        return Typing("categorical")
    if (kind_a, kind_b) == ("ordinal", "ordinal"):
        return Typing("ordinal")
    return Typing("continuous")


def _check_numbers(values: Sequence[str], side: str, integers: bool) -> None:
    for value in values:
        number = as_number(value)
        if number is None or (integers and not number.is_integer()):
            wanted = "an integer" if integers else "a number"
            raise TableError(f"label {value!r} in {side} is not {wanted}")


def as_number(value: str) -> float | None:
    """A label as a number; yes/true count as 1 and no/false as 0."""
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return 1.0
    if word in FALSE_WORDS:
        return 0.0
    return _number(word)


def as_category(value: str) -> str:
    """A label as a class: the yes/no spellings folded into 'yes' and 'no'."""
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return "yes"
    if word in FALSE_WORDS:
        return "no"
    return value.strip()
