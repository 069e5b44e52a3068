"""The question chain: a case turned into yes/no questions about what a sheet shows.

Every predicate and forbidden state of the case becomes one observable question about a
named panel; phase questions ask whether each panel shows its expected state; fixed
questions probe the layout (C0, so the layout gate is judged), state-transition visibility
(D8), phase distinctiveness (D9) and, on constraint cases, constraint execution (D13). A
dimension's score is the share of its questions answered the good way, mapped to 0-10
(docs/question-chain.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..cases.model import STAGES, Case
from .pixel import to_score

CHAIN_VERSION = "imagetime-chain-questions/1"
ANSWERS = ("yes", "no", "unsure")
VERDICTS: dict[str, bool | None] = {"yes": True, "no": False, "unsure": None}
CHAIN_DIMS = ("C0", "D8", "D9", "D13")
PANELS = {"t1": "panel t1 (top-left)", "t2": "panel t2 (top-right)",
          "t3": "panel t3 (bottom-left)", "t4": "panel t4 (bottom-right)"}

# Fixed questions, worded so that "yes" is the good answer.
C0_QUESTIONS = {
    "C0:grid": "Is the image divided into exactly four separate panels laid out as a 2x2 "
               "grid?",
    "C0:readable": "Is every panel complete and readable on its own (not cut off, merged with "
                   "another panel, or blank)?",
}
D8_QUESTIONS = {
    "D8:onset": "Does panel t2 (top-right) show the action beginning, visibly different from "
                "panel t1 (top-left)?",
    "D8:intermediate": "Does panel t3 (bottom-left) show an intermediate state, between those "
                       "of panels t2 and t4, rather than a copy of the start or the end?",
    "D8:variables": "Are the things that change in this action (the actor, the target, any "
                    "source and destination) visible in every panel, so each change can be "
                    "followed from panel to panel?",
}
D9_QUESTIONS = {
    "D9:distinct": "Are all four panels visibly different from each other, with no panel "
                   "repeating another?",
    "D9:final-late": "Is the final state reached only in panel t4 (bottom-right), not already "
                     "in an earlier panel?",
    "D9:one-scene": "Do the four panels show one continuous scene and subject rather than "
                    "unrelated snapshots?",
    "D9:forward": "Read in the order t1, t2, t3, t4, does every step move forward in time, "
                  "with no step going backwards?",
}
D13_QUESTIONS = {
    "D13:prohibitions": "Does every panel respect what the generation prompt forbids or "
                        "blocks (what must not happen does not happen in any panel)?",
}


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    kind: str  # predicate, forbidden, phase, temporal, D8, D9, D13
    target: str  # the predicate or forbidden-state id, the stage, or the question's key
    dims: tuple[str, ...] = ()  # the dimensions whose score it counts toward
    good: str = "yes"  # the answer that counts as evidence for those dimensions


def _where(stage: str) -> str:
    return PANELS.get(stage, "every panel (t1 to t4)")


def _clause(text: str) -> str:
    return text.strip().rstrip(".")


def questions(case: Case) -> tuple[Question, ...]:
    constraint = case.applicable.constraint
    out = [Question(f"predicate:{p.id}", f"In {_where(p.stage)}, is it true that "
                                         f"{_clause(p.text)}?", "predicate", p.id)
           for p in case.predicates]
    # A forbidden state seen is a constraint broken: it counts against D13 (good answer "no").
    out += [Question(f"forbidden:{f.id}", f"Does any panel show this: {_clause(f.text)}?",
                     "forbidden", f.id, ("D13",) if constraint else (), good="no")
            for f in case.forbidden]
    out += [Question(f"phase:{s}", f"Does {PANELS[s]} show this state: "
                                   f"{_clause(case.states[s])}?", "phase", s, ("D8", "D9"))
            for s in STAGES]
    out += [Question(f"temporal:{i + 1}", f"Across panels t1 to t4, is it true that "
                                          f"{_clause(t)}?", "temporal", str(i + 1), ("D9",))
            for i, t in enumerate(case.temporal_constraints)]
    out += [Question(k, v, "C0", k, ("C0",)) for k, v in C0_QUESTIONS.items()]
    out += [Question(k, v, "D8", k, ("D8",)) for k, v in D8_QUESTIONS.items()]
    # Reading forward in time is also C0's "expected temporal order".
    out += [Question(k, v, "D9", k, ("D9", "C0") if k == "D9:forward" else ("D9",))
            for k, v in D9_QUESTIONS.items()]
    if constraint:
        out += [Question(k, v, "D13", k, ("D13",)) for k, v in D13_QUESTIONS.items()]
    return tuple(out)


def dim_score(qs: Sequence[Question], answers: Mapping[str, str], dim: str) -> int | None:
    """floor(10 x share of the dimension's questions answered the good way); "unsure" is not
    evidence (between two scores, the lower one). None when no question counts toward it."""
    counted = [q for q in qs if dim in q.dims]
    if not counted:
        return None
    good = sum(answers.get(q.id) == q.good for q in counted)
    return to_score(good / len(counted))


def tally(qs: Sequence[Question], answers: Mapping[str, str], dim: str) -> str:
    counted = [q for q in qs if dim in q.dims]
    good = sum(answers.get(q.id) == q.good for q in counted)
    return f"{dim} {good}/{len(counted)}" if counted else f"{dim} n/a"


def labels(case: Case, answers: Mapping[str, str]) -> tuple[str, ...]:
    """Failure labels the answers state outright (they fire the rubric's caps)."""
    found = []
    if answers.get("C0:grid") == "no":
        found.append("not_2x2_sheet")
    if answers.get("D9:distinct") == "no":
        found.append("copied_phases")
    if answers.get("D9:final-late") == "no":
        found.append("premature_final_state")
    if case.applicable.constraint and (
            answers.get("D13:prohibitions") == "no"
            or any(answers.get(f"forbidden:{f.id}") == "yes" for f in case.forbidden)):
        found.append("constraint_violation")
    return tuple(found)
