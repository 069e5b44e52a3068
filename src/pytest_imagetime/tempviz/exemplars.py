"""The whole-prompt judge's k-shot exemplars: free-standing images with a prompt and a verdict.

A CSV or JSON Lines file, one exemplar a row: ``image`` (relative to the file), ``prompt``,
``cue`` (the temporal cue the simple question names), ``answer`` (yes or no), ``analysis``
(required for the instructed style) and an optional ``category``. The paper's 3-shot
exemplars are "out of distribution": an item is shown only exemplars whose ``category`` is
not its own (an exemplar from outside TempViz has none and is shown to every item).
"""

from __future__ import annotations

from pathlib import Path

from ..research.agreement.tables import FALSE_WORDS, TRUE_WORDS, TableError, read_table
from .examples import ExamplesError, _data_url
from .judge import Exemplar
from .names import CATEGORIES


def load_exemplars(path: Path, style: str) -> tuple[Exemplar, ...]:
    """The exemplars of ``path`` in file order; ExamplesError naming the file and line."""
    try:
        table = read_table(path)
        table.require("image", "prompt", "answer")
    except TableError as exc:
        raise ExamplesError(str(exc)) from None
    out = []
    for row, line in zip(table.rows, table.lines, strict=True):
        where = f"{path}:{line}"
        word = row["answer"].lower()
        if word not in TRUE_WORDS | FALSE_WORDS:
            raise ExamplesError(f"{where}: answer {row['answer']!r}: use yes or no")
        category = row.get("category", "")
        if category and category not in CATEGORIES:
            raise ExamplesError(f"{where}: category {category!r} is not one of "
                                f"{', '.join(CATEGORIES)} (leave it empty for an image from "
                                "outside TempViz)")
        if style == "instructed" and not row.get("analysis"):
            raise ExamplesError(f"{where}: empty 'analysis' (the instructed style shows each "
                                "exemplar's analysis before its rating)")
        image = Path(row["image"]).expanduser()
        url, _ = _data_url(image if image.is_absolute() else path.parent / image, where)
        out.append(Exemplar(row["prompt"], row.get("cue", ""),
                            "yes" if word in TRUE_WORDS else "no", row.get("analysis", ""),
                            url, category))
    if not out:
        raise ExamplesError(f"{path}: no exemplars")
    return tuple(out)
