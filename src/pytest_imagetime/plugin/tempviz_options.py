"""The TempViz suite's pytest options: light, since every pytest session adds them."""

from __future__ import annotations

import pytest

from ..tempviz.names import CATEGORIES, STYLES

TEMPVIZ_OPTIONS: tuple[str, ...] = ("tempviz-data", "tempviz-style", "tempviz-examples")


def add_tempviz_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("imagetime", "ImageTime benchmark")

    def option(name: str, help: str) -> None:
        dest = "imagetime_" + name.replace("-", "_")
        group.addoption(f"--imagetime-{name}", dest=dest, help=help, default=None)
        parser.addini(dest, help=help, default=None)

    option("tempviz-data", "TempViz suite: the directory holding the prompt tables "
           f"({', '.join(c + '.csv' for c in CATEGORIES)}; any of them).")
    option("tempviz-style", f"TempViz judge prompting: {' or '.join(STYLES)} (default: "
           "simple, the tables' yes/no questions; instructed: an assessor prompt with a "
           "rubric, an analysis, then Accept / Not accept).")
    option("tempviz-examples", "TempViz k-shot examples, CSV or JSONL: image, category, "
           "index, question (q1-q3), answer (yes/no) and, for the instructed style, "
           "analysis. Without it the judge is zero-shot.")
