"""k-shot examples the user supplies: images with the answer a careful judge gives.

A CSV or JSON Lines file, one example a row: ``image`` (a path, relative to the file),
``category`` and ``index`` (the TempViz row the image was drawn for, so its question is asked
exactly as the items' are), ``question`` (q1, q2 or q3), ``answer`` (yes or no) and, for the
instructed style, ``analysis`` (the reasoning shown before the rating). An example is shown
to the items of its category when they are asked its question.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, UnidentifiedImageError

from ..research.agreement.tables import FALSE_WORDS, TRUE_WORDS, TableError, read_table
from .names import CATEGORIES
from .prompts import QUESTIONS, Prompt, TempvizDataError, load_table, table_path

MIME = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp", "GIF": "image/gif"}


class ExamplesError(ValueError):
    """An examples file that cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class Example:
    prompt: Prompt
    question: str  # q1, q2 or q3
    answer: str  # yes or no
    analysis: str
    image: Path
    data_url: str
    line: int


@dataclass(frozen=True)
class Examples:
    path: Path
    items: tuple[Example, ...]
    sha256: str  # of the file and every image: a change re-judges

    def shown(self, category: str, question: str) -> tuple[Example, ...]:
        return tuple(e for e in self.items
                     if e.prompt.category == category and e.question == question)

    @property
    def k(self) -> int:
        """The most examples any (category, question) gets."""
        counts: dict[tuple[str, str], int] = {}
        for e in self.items:
            key = (e.prompt.category, e.question)
            counts[key] = counts.get(key, 0) + 1
        return max(counts.values(), default=0)

    def counts(self) -> dict[str, dict[str, int]]:
        return {c: {q: len(self.shown(c, q)) for q in QUESTIONS} for c in CATEGORIES
                if any(e.prompt.category == c for e in self.items)}


def _data_url(path: Path, where: str) -> tuple[str, bytes]:
    try:
        data = path.read_bytes()
        with Image.open(path) as image:
            image.verify()
            kind = image.format or ""
    except (OSError, UnidentifiedImageError) as exc:
        raise ExamplesError(f"{where}: cannot read the image {path}: {exc}") from None
    mime = MIME.get(kind)
    if mime is None:
        raise ExamplesError(f"{where}: {path} is {kind or 'an unknown format'}; use PNG, JPEG, "
                            "WebP or GIF")
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii"), data


def _rows_of(directory: Path, category: str, where: str,
             cache: dict[str, Mapping[str, Prompt]]) -> Mapping[str, Prompt]:
    if category not in cache:
        path = table_path(directory, category)
        if not path.is_file():
            raise ExamplesError(f"{where}: no table {path} for this example's category")
        try:
            cache[category] = {p.index: p for p in load_table(path)}
        except TempvizDataError as exc:
            raise ExamplesError(str(exc)) from None
    return cache[category]


def load_examples(path: Path, data_dir: Path, style: str) -> Examples:
    """The examples of ``path``, their rows looked up in ``data_dir``; ExamplesError."""
    try:
        table = read_table(path)
        table.require("image", "category", "index", "question", "answer")
    except TableError as exc:
        raise ExamplesError(str(exc)) from None
    if style == "instructed" and "analysis" not in table.columns:
        raise ExamplesError(f"{path}: no column 'analysis' (the instructed style shows each "
                            f"example's analysis before its rating; columns: "
                            f"{', '.join(table.columns)})")
    digest = hashlib.sha256(path.read_bytes())
    cache: dict[str, Mapping[str, Prompt]] = {}
    items = []
    for row, line in zip(table.rows, table.lines, strict=True):
        where = f"{path}:{line}"
        category = row["category"]
        if category not in CATEGORIES:
            raise ExamplesError(f"{where}: category {category!r} is not one of "
                                f"{', '.join(CATEGORIES)}")
        prompt = _rows_of(data_dir, category, where, cache).get(row["index"])
        if prompt is None:
            raise ExamplesError(f"{where}: no row with index {row['index']!r} in "
                                f"{table_path(data_dir, category)}")
        question = row["question"].lower()
        if question not in QUESTIONS:
            raise ExamplesError(f"{where}: question {row['question']!r}: use q1, q2 or q3")
        word = row["answer"].lower()
        if word not in TRUE_WORDS | FALSE_WORDS:
            raise ExamplesError(f"{where}: answer {row['answer']!r}: use yes or no")
        analysis = row.get("analysis", "")
        if style == "instructed" and not analysis:
            raise ExamplesError(f"{where}: empty 'analysis' (the instructed style shows each "
                                "example's analysis before its rating)")
        image = Path(row["image"]).expanduser()
        image = image if image.is_absolute() else path.parent / image
        url, data = _data_url(image, where)
        digest.update(hashlib.sha256(data).digest())
        items.append(Example(prompt, question, "yes" if word in TRUE_WORDS else "no",
                             analysis, image, url, line))
    if not items:
        raise ExamplesError(f"{path}: no examples")
    return Examples(path, tuple(items), digest.hexdigest())
