"""``imagetime lint``: every rule of the case-writing guide that a program can check.

Per-file rules (schema, stages, levels, prompt layout, entities) come from ``cases``; the
benchmark-wide rules live here: ids unique across files, the action inventory, two variants
per concept that are not copies, and completeness of the linted domains.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .cases import Case, Problem, case_files, duplicate_id_problems, inspect_case_file
from .inventory import by_domain_and_concept, inventory

COPY_WORD_OVERLAP = 0.8


@dataclass(frozen=True)
class LintResult:
    cases: tuple[Case, ...]
    problems: tuple[Problem, ...]
    files: int

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")


def lint_paths(paths: Sequence[Path], *, custom: bool = False,
               complete: bool = False) -> LintResult:
    files = case_files(paths)
    cases: list[Case] = []
    problems: list[Problem] = []
    for path in files:
        file_cases, file_problems = inspect_case_file(path, display=str(path))
        cases.extend(file_cases)
        problems.extend(file_problems)
    # Within a file the file's own check already found them; _dedupe drops the repeats.
    problems.extend(duplicate_id_problems(cases))
    if not custom:
        problems.extend(inventory_problems(cases))
        problems.extend(variant_problems(cases))
        if complete:
            problems.extend(completeness_problems(cases))
    return LintResult(tuple(cases), tuple(_dedupe(problems)), len(files))


def _dedupe(problems: Iterable[Problem]) -> Iterator[Problem]:
    seen: set[Problem] = set()
    for p in problems:
        if p not in seen:
            seen.add(p)
            yield p


def _closest(word: str, options: Iterable[str]) -> str:
    matches = difflib.get_close_matches(word, list(options), n=1, cutoff=0.5)
    return f"; did you mean {matches[0]!r}?" if matches else ""


def inventory_problems(cases: Iterable[Case]) -> Iterator[Problem]:
    table = by_domain_and_concept()
    known_domains = {c.domain for c in inventory()}
    for case in cases:
        def problem(field: str, message: str, case: Case = case) -> Problem:
            return Problem(case.source, message, line=case.line, case_id=case.id, field=field)

        if case.domain not in known_domains:
            yield problem("domain", f"{case.domain!r} is not a benchmark domain"
                          f"{_closest(case.domain, known_domains)} (use --custom for a team's "
                          "own concepts)")
            continue
        row = table.get((case.domain, case.concept))
        if row is None:
            concepts = [c for (d, c) in table if d == case.domain]
            yield problem("concept", f"{case.concept!r} is not a concept of {case.domain} in "
                          f"the inventory{_closest(case.concept, concepts)}")
            continue
        if case.subcategory != row.subcategory:
            yield problem("subcategory", f"{case.subcategory!r} differs from the inventory's "
                          f"{row.subcategory!r} for {case.concept!r}")
        if case.difficulty != row.difficulty:
            yield problem("difficulty", f"{case.difficulty!r} differs from the inventory's "
                          f"{row.difficulty!r} for {case.concept!r}")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def word_overlap(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    return len(wa & wb) / max(1, len(wa | wb))


def variant_problems(cases: Iterable[Case]) -> Iterator[Problem]:
    groups: dict[tuple[str, str], list[Case]] = defaultdict(list)
    for case in cases:
        groups[(case.domain, case.concept)].append(case)
    for (domain, concept), members in sorted(groups.items()):
        by_variant: dict[int, list[Case]] = defaultdict(list)
        for case in members:
            by_variant[case.variant].append(case)
        first = members[0]
        for variant in (1, 2):
            if len(by_variant[variant]) > 1:
                ids = ", ".join(c.id for c in by_variant[variant])
                yield Problem(first.source, f"variant {variant} of {concept!r} appears "
                              f"{len(by_variant[variant])} times ({ids})", line=first.line,
                              case_id=first.id, field="variant")
            elif not by_variant[variant]:
                yield Problem(first.source, f"{concept!r} ({domain}) has no variant {variant}; "
                              "each concept needs variants 1 and 2", line=first.line,
                              case_id=first.id, field="variant")
        if by_variant[1] and by_variant[2]:
            yield from _copy_problems(by_variant[1][0], by_variant[2][0])


def _copy_problems(a: Case, b: Case) -> Iterator[Problem]:
    overlap = word_overlap(a.prompt, b.prompt)
    if overlap >= COPY_WORD_OVERLAP:
        yield Problem(b.source, f"prompt shares {overlap:.0%} of its words with {a.id}; the two "
                      "variants must differ visibly", line=b.line, case_id=b.id, field="prompt")
    same_look = (a.setup == b.setup and a.entities.get("actors") == b.entities.get("actors")
                 and a.entities.get("targets") == b.entities.get("targets"))
    if same_look:
        yield Problem(b.source, f"same scene, style, camera, actors and targets as {a.id}; "
                      "change at least one", line=b.line, case_id=b.id, field="setup")


def completeness_problems(cases: Iterable[Case]) -> Iterator[Problem]:
    present = {(c.domain, c.concept, c.variant) for c in cases}
    linted_domains = {c.domain for c in cases}
    for row in inventory():
        if row.domain not in linted_domains:
            continue
        for variant in (1, 2):
            if (row.domain, row.concept, variant) not in present:
                yield Problem(row.domain, f"inventory concept {row.concept!r} has no variant "
                              f"{variant}", field="concept")
