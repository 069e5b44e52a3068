"""The TempViz suite's names: its prompt tables' categories and its judge's prompting styles."""

from __future__ import annotations

CATEGORIES: tuple[str, ...] = ("Animals", "Artworks", "Buildings", "Landscapes", "Maps")
STYLES: tuple[str, ...] = ("simple", "instructed")  # judge prompting
