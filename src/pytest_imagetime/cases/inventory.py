"""The benchmark's action inventory: 375 concepts over 22 domains, shipped in the package."""

from __future__ import annotations

import csv
import functools
import re
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Concept:
    domain: str
    subcategory: str
    concept: str
    difficulty: str


@functools.cache
def inventory() -> tuple[Concept, ...]:
    text = resources.files("pytest_imagetime").joinpath("data/action_inventory.tsv").read_text(
        encoding="utf-8")
    rows = csv.DictReader(text.splitlines(), delimiter="\t")
    return tuple(
        Concept(r["domain"], r["subcategory"], r["action_concept"], r["difficulty"]) for r in rows
    )


@functools.cache
def by_domain_and_concept() -> dict[tuple[str, str], Concept]:
    return {(c.domain, c.concept): c for c in inventory()}


@functools.cache
def domains() -> tuple[str, ...]:
    return tuple(sorted({c.domain for c in inventory()}))


def slug(text: str) -> str:
    """A marker-safe form of a domain or label: 'Education & Lab' -> 'education_lab'."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
