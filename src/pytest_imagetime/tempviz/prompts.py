"""The TempViz prompt tables: one CSV per category, loaded and checked row by row.

The tables differ per category (Buildings has ``Imperative``, Maps has no ``subject``, the
Artworks table names ``goldenrecordImages`` twice); only the columns every item needs are
required. A problem names the file and line; a missing column lists the columns found.
"""

from __future__ import annotations

import _csv
import csv
import functools
import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..cases.inventory import slug
from ..cases.model import Case, Setup
from ..rubric.facts import Applicability
from .names import CATEGORIES

QUESTIONS: tuple[str, ...] = ("q1", "q2", "q3")
# Which annotation column asks which question (the tables' order differs from the paper's).
QUESTION_COLUMNS: Mapping[str, str] = {
    "q1": "annotation_prompt_1",  # no visible generation errors
    "q2": "annotation_prompt_0",  # the subject is present
    "q3": "annotation_prompt_2",  # the temporal cue is applied correctly
}
QUESTION_NAMES: Mapping[str, str] = {
    "q1": "no visible generation errors",
    "q2": "the subject is present",
    "q3": "the temporal cue is applied correctly",
}
REQUIRED: tuple[str, ...] = ("index", "prompt", "promptcategory", "difficulty",
                             *sorted(QUESTION_COLUMNS.values()))
# Columns that tell the instructed judge what the temporal cue means for a row (the
# demolition date of a building, the lifespan of an animal); shown when present.
FACT_COLUMNS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "Animals": (("lifespan", "typical lifespan in years"),
                ("time", "age rule (share of the lifespan)")),
    "Artworks": (("subject", "art period"), ("periodstart", "period start (year)"),
                 ("periodend", "period end (year)")),
    "Buildings": (("DemolitionDate", "demolition date"), ("currentState", "state today")),
    "Landscapes": (("timecategory", "kind of time cue"), ("temporalvalue", "time cue"),
                   ("daytimevalue", "time of day")),
    "Maps": (("place", "region"), ("suggestion", "year")),
}
# The release's prompt categories and difficulties, registered as markers up front (so
# ``pytest --markers`` lists them); others found in a table are registered when collected.
KNOWN_PROMPT_CATEGORIES: tuple[str, ...] = (
    "youth", "realistic age", "unrealistic age", "year", "period", "before", "after",
    "random before", "random after", "Seasonality", "Daytime", "maps")
KNOWN_DIFFICULTIES: tuple[str, ...] = ("1", "2")
SHOWN_PROBLEMS = 10  # a broken table lists this many problems, then a count


class TempvizDataError(Exception):
    """A table that cannot be used; carries every problem found (up to a limit)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        shown = list(self.problems[:SHOWN_PROBLEMS])
        if len(self.problems) > SHOWN_PROBLEMS:
            shown.append(f"... and {len(self.problems) - SHOWN_PROBLEMS} more problems")
        super().__init__("\n".join(shown))


@dataclass(frozen=True)
class Prompt:
    """One TempViz prompt: what the model draws and what the judge asks about it."""

    category: str
    index: str
    prompt: str
    promptcategory: str
    difficulty: str
    questions: Mapping[str, str]  # q1..q3 -> the table's yes/no question
    subject: str = ""
    expected: tuple[str, ...] = ()  # expectedValue: what the temporal cue should look like
    facts: tuple[tuple[str, str], ...] = ()  # (label, value) from FACT_COLUMNS
    source: str = ""
    line: int = 0

    @property
    def id(self) -> str:
        return f"{self.category}-{self.index}"

    @property
    def prompt_sha256(self) -> str:
        return hashlib.sha256(self.prompt.encode()).hexdigest()

    def markers(self) -> tuple[str, ...]:
        # Once each: the Maps tables' prompt category is "maps" too.
        return tuple(dict.fromkeys((
            "tempviz", f"tempviz_{slug(self.category)}", f"tempviz_{slug(self.promptcategory)}",
            f"tempviz_difficulty_{slug(self.difficulty)}")))

    def as_case(self) -> Case:
        """A minimal case for the image backends, which take cases: its prompt is the
        TempViz prompt, its id the item id, its scene and subject the prompt's."""
        subject = self.subject or self.prompt
        return Case(
            id=self.id, domain=f"TempViz {self.category}", subcategory=self.promptcategory,
            concept=subject, difficulty=self.difficulty, variant=1, levels=(),
            applicable=Applicability(False, False, False),
            setup=Setup(scene=self.prompt, style="", camera=""),
            entities={"targets": (subject,)}, states={}, predicates=(),
            temporal_constraints=(), forbidden=(), prompt=self.prompt,
            source=self.source, line=self.line)


def table_path(directory: Path, category: str) -> Path:
    return directory / f"{category}.csv"


def category_of(path: Path) -> str | None:
    """The category a table's file name gives (``Animals.csv``), else None."""
    return path.stem if path.suffix == ".csv" and path.stem in CATEGORIES else None


def found_tables(directory: Path) -> list[Path]:
    return [table_path(directory, c) for c in CATEGORIES if table_path(directory, c).is_file()]


def check_directory(directory: Path) -> list[Path]:
    """The category tables in ``directory``; ValueError saying what is missing."""
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a directory")
    tables = found_tables(directory)
    if not tables:
        there = sorted(p.name for p in directory.iterdir())[:10]
        raise ValueError(f"no TempViz table in {directory}: expected one or more of "
                         f"{', '.join(c + '.csv' for c in CATEGORIES)} (found: "
                         f"{', '.join(there) or 'nothing'})")
    return tables


def _header(raw: Sequence[str]) -> list[str]:
    """Column names, stripped; a repeated name gets ``.1``, ``.2`` as pandas writes them."""
    seen: dict[str, int] = {}
    names = []
    for name in (h.strip() for h in raw):
        count = seen.get(name, 0)
        seen[name] = count + 1
        names.append(name if count == 0 else f"{name}.{count}")
    return names


def _keywords(text: str) -> tuple[str, ...]:
    # expectedValue lists repeat themselves in some tables; keep each keyword once.
    return tuple(dict.fromkeys(k.strip() for k in text.split(",") if k.strip()))


def load_table(path: Path, display: str | None = None) -> list[Prompt]:
    """Every prompt of one category table; TempvizDataError listing what is wrong."""
    stat = path.stat()
    return list(_load(path, display or str(path), stat.st_size, stat.st_mtime_ns))


@functools.lru_cache(maxsize=16)
def _load(path: Path, where: str, _size: int, _mtime: int) -> tuple[Prompt, ...]:
    """Cached per file version: the examples file and the collector read the same tables."""
    category = category_of(path)
    if category is None:
        raise TempvizDataError([f"{where}: not a TempViz table name (expected one of "
                                f"{', '.join(c + '.csv' for c in CATEGORIES)})"])
    try:
        # Bytes, then decode: utf-8-sig drops a spreadsheet's byte order mark.
        text = path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise TempvizDataError([f"{where}: cannot read: {exc}"]) from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        raw = next(reader, None)
        if raw is None:
            raise TempvizDataError([f"{where}: empty file, expected a header line"])
        columns = _header(raw)
        missing = [c for c in REQUIRED if c not in columns]
        if missing:
            raise TempvizDataError([f"{where}:1: missing column {', '.join(map(repr, missing))} "
                                    f"(columns found: {', '.join(columns) or 'none'})"])
        return tuple(_rows(reader, columns, category, where))
    except csv.Error as exc:
        raise TempvizDataError([f"{where}:{reader.line_num}: unreadable CSV: {exc}"]) from None


def _rows(reader: _csv.Reader, columns: list[str], category: str, where: str) -> list[Prompt]:
    prompts: list[Prompt] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    line = reader.line_num + 1
    for record in reader:
        here, line = line, reader.line_num + 1
        if not any(v.strip() for v in record):
            continue
        if len(record) != len(columns):
            problems.append(f"{where}:{here}: {len(record)} fields, the header has "
                            f"{len(columns)}")
            continue
        row = {c: v.strip() for c, v in zip(columns, record, strict=True)}
        empty = [c for c in REQUIRED if not row[c]]
        if empty:
            which = f"index {row['index']}: " if row["index"] else ""
            problems.append(f"{where}:{here}: {which}empty {', '.join(map(repr, empty))}")
            continue
        index = row["index"]
        if index in first_line:
            problems.append(f"{where}:{here}: index {index} again (first on line "
                            f"{first_line[index]})")
            continue
        first_line[index] = here
        prompts.append(Prompt(
            category=category, index=index, prompt=row["prompt"],
            promptcategory=row["promptcategory"], difficulty=row["difficulty"],
            questions={q: row[c] for q, c in QUESTION_COLUMNS.items()},
            subject=row.get("subject", "") or row.get("place", ""),
            expected=_keywords(row.get("expectedValue", "")),
            facts=tuple((label, row[c]) for c, label in FACT_COLUMNS[category] if row.get(c)),
            source=where, line=here))
    if problems:
        raise TempvizDataError(problems)
    return prompts
