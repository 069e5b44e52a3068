"""The rules every case must meet beyond the schema, errors and warnings, each a located
``Problem``: stages covered, levels, the prompt's grid and panels, entities named in the
prompt, declared nulls, duplicate ids, and the writing rules of ``rules``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..rubric.facts import DECLARABLE_NULLS, FLAG_NULLS
from . import rules as case_rules
from .model import STAGES, Case, Problem, Severity, field_name

_PANEL_WORDS = (
    ("panel 1", "top left", "top-left"),
    ("panel 2", "top right", "top-right"),
    ("panel 3", "bottom left", "bottom-left"),
    ("panel 4", "bottom right", "bottom-right"),
)
_GRID = re.compile(r"\b(2\s*[x×]\s*2|two[- ]by[- ]two)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(not|no|never|only|cannot|can't|without|stays?|remains?|unchanged|"
                       r"blocked|locked|instead)\b", re.IGNORECASE)
_AMOUNT = re.compile(r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|half|third|"
                     r"quarter|full|empty|level|pair|dozen|all|each|both|single|more|less)\b",
                     re.IGNORECASE)
_STOP = frozenset("""a an the of on in at to with and or for from by into onto its his her their
left right top bottom front back side small large big one two three four five six each that this
near next over under""".split())


_WORD = re.compile(r"[a-z]{3,}")  # whole runs of three or more letters


def content_words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _STOP


def _names_word(text: str, word: str) -> bool:
    """Whether ``word`` (letters a-z) is a whole run of letters somewhere in ``text``."""
    start = text.find(word)
    while start != -1:
        end = start + len(word)
        if ((start == 0 or not "a" <= text[start - 1] <= "z")
                and (end == len(text) or not "a" <= text[end] <= "z")):
            return True
        start = text.find(word, start + 1)
    return False


def case_problems(case: Case, shown: str,
                  line_of: Any = lambda field: None) -> Iterator[Problem]:
    """The rules every case must meet, errors and warnings, beyond the schema."""

    def problem(fld: tuple[str | int, ...], message: str,
                severity: Severity = "error") -> Problem:
        return Problem(shown, message, line=line_of(fld), case_id=case.id,
                       field=field_name(fld), severity=severity)

    stages_covered = {p.stage for p in case.predicates}
    missing = [s for s in STAGES if s not in stages_covered]
    if missing:
        yield problem(("predicates",), f"no predicate for stage {', '.join(missing)}; "
                                       "each of t1, t2, t3, t4 needs at least one")
    seen: set[str] = set()
    for i, p in enumerate(case.predicates):
        if p.id in seen:
            yield problem(("predicates", i, "id"), f"predicate id {p.id!r} is used twice")
        seen.add(p.id)
    for level in ("L0", "L1"):
        if level not in case.levels:
            yield problem(("levels",), f"{level} applies to every case; add it")
    if case.applicable.constraint and "L6" not in case.levels:
        yield problem(("levels",), "applicable.constraint is true, so levels must include L6")
    if "L6" in case.levels and not case.applicable.constraint:
        yield problem(("levels",), "L6 is only for cases with an explicit constraint; "
                                   "set applicable.constraint to true or drop L6")
    prompt = case.prompt.lower()
    if "square" not in prompt:
        yield problem(("prompt",), "the prompt must ask for one square image")
    if not _GRID.search(case.prompt):
        yield problem(("prompt",), "the prompt must name the 2x2 grid layout ('2x2')")
    for number, names in enumerate(_PANEL_WORDS, start=1):
        if not any(name in prompt for name in names):
            yield problem(("prompt",), f"the prompt does not name panel {number} "
                                       f"('{names[0].capitalize()}' or '{names[1]}')")
    texts = [case.states[s].lower() for s in STAGES]
    if len(set(texts)) < len(texts):
        yield problem(("states",), "two or more states are identical; t1..t4 must differ")
    if not (case.entities.get("actors") or case.entities.get("targets")):
        yield problem(("entities",), "name at least one actor or target")
    for role, phrases in case.entities.items():
        for i, phrase in enumerate(phrases):
            words = content_words(phrase)
            # As words & content_words(case.prompt), without splitting every prompt.
            if words and not any(_names_word(prompt, word) for word in words):
                yield problem(("entities", role, i),
                              f"{phrase!r} is not named in the prompt; the judge can only check "
                              "what the prompt states", "warning")
    yield from _declared_null_problems(case, problem)
    if case.applicable.constraint and not _NEGATION.search(case.prompt):
        yield problem(("prompt",), "a constraint case must state what must not happen",
                      "warning")
    if case.applicable.quantity and not _AMOUNT.search(case.prompt):
        yield problem(("prompt",), "a quantity case should name its counts or amounts",
                      "warning")
    for finding in case_rules.findings(case):
        yield problem(finding.field, finding.message, "warning")


def _declared_null_problems(case: Case, problem: Callable[..., Problem]) -> Iterator[Problem]:
    """``not_applicable`` must name only dimensions a case may declare, consistently with its
    entities; a case without actors declares D10 (gaze and intent) or gets a warning."""
    declared = case.applicable.declared
    for dim in declared:
        if dim in FLAG_NULLS:
            yield problem(("not_applicable",), f"{dim} is not declared here: {FLAG_NULLS[dim]}")
        elif dim not in DECLARABLE_NULLS:
            yield problem(("not_applicable",),
                          f"{dim} applies to every case and cannot be declared not applicable; "
                          f"declarable: {', '.join(DECLARABLE_NULLS)}")
    actors = case.entities.get("actors")
    if "D10" in declared and actors:
        yield problem(("not_applicable",), f"D10 is declared not applicable, but the case has "
                                           f"actors ({'; '.join(actors)}): "
                                           f"{DECLARABLE_NULLS['D10']}")
    if not actors and "D10" not in declared:
        yield problem(("not_applicable",), "the case has no actors, so D10 (gaze and intent) "
                                           "does not apply: add 'not_applicable: [D10]'",
                      "warning")


def duplicate_id_problems(cases: Iterable[Case]) -> Iterator[Problem]:
    first: dict[str, Case] = {}
    for case in cases:
        if case.id in first:
            other = first[case.id]
            yield Problem(case.source, f"duplicate case id; first defined at "
                                       f"{other.source}:{other.line}", line=case.line,
                          case_id=case.id, field="id")
        else:
            first[case.id] = case
