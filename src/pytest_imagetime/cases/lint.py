"""``imagetime lint``: every rule of the case-writing guide that a program can check.

Per-file rules (schema, stages, levels, prompt layout, entities, and the review rules of
``case_rules``) come from ``cases``; the benchmark-wide rules live here: ids unique across
files, the action inventory, two variants per concept that are not copies and that flag what
they both check alike, near-duplicates across domains, and completeness of the linted domains.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .checks import content_words, duplicate_id_problems
from .inventory import by_domain_and_concept, inventory
from .loading import case_files, inspect_case_file
from .model import Case, Problem

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
        problems.extend(cross_domain_problems(cases))
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
            yield from sibling_flag_problems(by_variant[1][0], by_variant[2][0])


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


# ---------------------------------------------------------------- sibling flags

# What a case's own predicates and temporal constraints check, per applicability flag: a
# count of things ("three boxes", "the number of cups") or something hidden and seen again.
_NUMBER = r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+)"
CHECKS: dict[str, re.Pattern[str]] = {
    "quantity": re.compile(
        rf"(?<!panel )(?<!panels )(?<!and )(?<!, )\b{_NUMBER}\s+(?:[a-z-]+\s+){{0,2}}?[a-z]+s\b"
        r"|\bcount\b|\bnumber of\b|\bfewer\b|\bas many\b", re.IGNORECASE),
    "occlusion": re.compile(
        r"\b(?:hidden|hides|hiding|out of (?:view|sight)|occlud\w*|reappear\w*|disappear\w*|"
        r"no longer visible|not visible|(?:is|are|becomes?) visible again|covered by|"
        r"covers (?:the|its|his|her|their))\b", re.IGNORECASE),
}


def checked_kinds(case: Case) -> dict[str, str]:
    """The applicability flags whose kind of thing the case checks, with the words that show it."""
    texts = [p.text for p in case.predicates] + list(case.temporal_constraints)
    found: dict[str, str] = {}
    for flag, pattern in CHECKS.items():
        for text in texts:
            match = pattern.search(text)
            if match:
                found[flag] = match.group(0)
                break
    return found


def sibling_flag_problems(a: Case, b: Case) -> Iterator[Problem]:
    """Two variants of one concept that both check a count (or an occlusion) must both set the
    flag that makes the judge score it (D11, D12)."""
    kinds_a, kinds_b = checked_kinds(a), checked_kinds(b)
    for flag in CHECKS:
        on_a, on_b = getattr(a.applicable, flag), getattr(b.applicable, flag)
        if on_a == on_b or flag not in kinds_a or flag not in kinds_b:
            continue
        off, on = (b, a) if on_a else (a, b)
        words = (kinds_b if off is b else kinds_a)[flag]
        yield Problem(off.source, f"applicable.{flag} is false, but this case checks it too "
                      f"({words!r}) and its sibling {on.id} sets it; set it to true",
                      line=off.line, case_id=off.id, field=f"applicable.{flag}",
                      severity="warning")


# ---------------------------------------------------------------- across domains

# Jaccard similarity of two prompts' content words once the shared template is removed; the
# packaged cases' cross-domain pairs are at most 0.36 (docs/cases.md).
CROSS_DOMAIN_SIMILARITY = 0.4
_OPENING = re.compile(r"^.*?\bshowing\b[^:]*:\s*", re.IGNORECASE)
_PANEL_LABEL = re.compile(r"\bpanel [1-4]\s*\((?:top|bottom)[ -](?:left|right)\)\s*:",
                          re.IGNORECASE)
_TEMPLATE_WORDS = frozenset("panel panels image keep identical every same scene camera view "
                            "fixed moments".split())


def scene_words(case: Case) -> frozenset[str]:
    """The prompt's content words without the template every prompt shares: the opening
    sentence up to its colon, the panel labels, and the style sentence."""
    text = _OPENING.sub("", case.prompt, count=1)
    text = _PANEL_LABEL.sub(" ", text).lower().replace(case.setup.style.lower(), " ")
    return frozenset(content_words(text) - _TEMPLATE_WORDS)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / max(1, len(a | b))


def cross_domain_problems(cases: Sequence[Case],
                          threshold: float = CROSS_DOMAIN_SIMILARITY) -> Iterator[Problem]:
    words = [scene_words(c) for c in cases]
    for i, a in enumerate(cases):
        for j in range(i + 1, len(cases)):
            b = cases[j]
            if a.domain == b.domain:
                continue
            score = similarity(words[i], words[j])
            if score >= threshold:
                yield Problem(b.source, f"near-duplicate of {a.id} ({a.domain}): once the "
                              f"shared template is removed their prompts share {score:.0%} of "
                              f"their words (limit {threshold:.0%}); change the scene, layout or "
                              f"anchors of one", line=b.line, case_id=b.id, field="prompt",
                              severity="warning")
