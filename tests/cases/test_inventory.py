"""The action inventory shipped in the package, and marker-safe slugs."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.cases.inventory import by_domain_and_concept, domains, inventory, slug


def test_the_inventory_holds_375_concepts_over_22_domains() -> None:
    concepts = inventory()
    assert len(concepts) == 375
    assert len(domains()) == 22 and list(domains()) == sorted(domains())
    assert {c.difficulty for c in concepts} <= {"easy", "medium", "hard"}
    assert all(c.domain and c.subcategory and c.concept for c in concepts)


def test_concepts_are_found_by_domain_and_name() -> None:
    table = by_domain_and_concept()
    assert len(table) == len(inventory())  # no concept is listed twice in a domain
    first = inventory()[0]
    assert table[(first.domain, first.concept)] is first


@given(st.text(max_size=40))
def test_slugs_are_marker_safe(text: str) -> None:
    made = slug(text)
    assert re.fullmatch(r"([a-z0-9]+(_[a-z0-9]+)*)?", made)
    assert slug(made) == made


def test_slugs_of_the_domains_are_distinct() -> None:
    assert slug("Education & Lab") == "education_lab"
    assert len({slug(d) for d in domains()}) == len(domains())
