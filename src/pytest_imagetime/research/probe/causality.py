"""TimeCausality's free-text aspects on a motion sheet: the questions, their ground truth, the
rating prompt and how a rating is read.

Aspect II (Reasoning, "why is the top one later?") and Aspect III (Inferring, "what caused
the change?") show a pair of panels with the later one on top and ask the paper's questions
verbatim; a rater scores each answer 0-5 against a ground truth written from the case (its
states, the predicates that differ between the two stages, its temporal constraints, its
action). Definitions and what is the paper's: docs/order-probe.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...backends.openai_client import InvalidAnswer
from ...cases.model import Case

ASPECTS = ("order", "reasoning", "inferring")
TEXT_ASPECTS = ("reasoning", "inferring")
RATING_MIN, RATING_MAX = 0, 5
ONSET_STAGE = "t2"  # the cases' rule: t2 shows the action's onset, not its result

# TimeCausality, Appendix D.3: {obj} is the sample's object name.
REASONING_QUESTION = ("Why does the {obj} in the scene on the top occur after the one on the "
                      "bottom? Answer in one sentence.")
INFERRING_QUESTION = ("What caused the transition from the {obj} on the bottom to the {obj} on "
                      "the top? Answer in one sentence.")
# TimeCausality, Appendix D.2: the free-text judge's prompt, sent as one user message.
RATING_PROMPT = (
    "\nYou will be given a ground truth and model output couple.\n"
    "Your task is to provide a 'total rating' scoring how well the model output matches the "
    "semantic meaning of the ground truth.\n"
    "Give your answer as an integer on a scale of 0 to 5, where 0 means that the model output "
    "is completely unrelated to the ground truth, and 5 means that the model output perfectly "
    "matches the semantic meaning of the ground truth.\n"
    "\n"
    "Provide your feedback as follows:\n"
    "\n"
    "Feedback:::\n"
    "Total rating: (your rating, as an integer between 0 and 5)\n"
    "\n"
    "Now here are the ground truth and model output.\n"
    "\n"
    "Ground Truth: {ground_truth}\n"
    "Model Output: {model_output}\n"
    "\n"
    "Feedback:::\n"
    "Total rating: ")

_ARTICLE = re.compile(r"^(a|an|the|one)\s+", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_RATING_MARK = "total rating:"


def source_object(case: Case) -> str:
    """The object the questions name: the case's first target (else its first actor), without
    its leading article and the description after its first comma."""
    names = [*case.entities.get("targets", ()), *case.entities.get("actors", ())]
    if not names:
        return "scene"
    return _ARTICLE.sub("", names[0].split(",")[0].strip()) or "scene"


def question(aspect: str, case: Case) -> str:
    template = REASONING_QUESTION if aspect == "reasoning" else INFERRING_QUESTION
    return template.format(obj=source_object(case))


def _sentence(text: str) -> str:
    return text.strip().rstrip(".") + "."


def _stage_predicates(case: Case, stage: str) -> list[str]:
    return [p.text for p in case.predicates if p.stage == stage]


def reasoning_truth(case: Case, early: str, late: str) -> str:
    """Why the later stage comes after the earlier one: both states, the predicates that hold
    at one stage and not the other, and the case's temporal constraints."""
    parts = [f"First ({early}): {_sentence(case.states[early])}",
             f"Later ({late}): {_sentence(case.states[late])}"]
    before, after = _stage_predicates(case, early), _stage_predicates(case, late)
    if before or after:
        parts.append(f"What changes: {'; '.join(before) or 'nothing stated'} becomes "
                     f"{'; '.join(after) or 'nothing stated'}.")
    if case.temporal_constraints:
        parts.append(f"Why this order: {'; '.join(case.temporal_constraints)}.")
    return " ".join(parts)


def _named(role: str, names: Sequence[str]) -> str:
    return f", {role} {' and '.join(names)}" if names else ""


def inferring_truth(case: Case) -> str:
    """What causes the change: the case's action, who does it with what to what, and its
    onset (the t2 state)."""
    entities = case.entities
    action = (f"The action {case.concept}{_named('by', entities.get('actors', ()))}"
              f"{_named('with', entities.get('tools', ()))}"
              f"{_named('on', entities.get('targets', ()))}.")
    onset = case.states.get(ONSET_STAGE)
    return f"{action} It begins: {_sentence(onset)}" if onset else action


def ground_truth(aspect: str, case: Case, early: str, late: str) -> str:
    return reasoning_truth(case, early, late) if aspect == "reasoning" \
        else inferring_truth(case)


def rating_prompt(truth: str, answer: str) -> str:
    return RATING_PROMPT.format(ground_truth=truth, model_output=answer)


def read_rating(content: str) -> int:
    """The integer 0-5 after the last "Total rating:" (else the answer's first number);
    InvalidAnswer for none, a fraction or a number off the scale."""
    lowered = content.lower()
    at = lowered.rfind(_RATING_MARK)
    tail = content[at + len(_RATING_MARK):] if at >= 0 else content
    found = _NUMBER.search(tail)
    if found is None:
        raise InvalidAnswer(f"no rating in the answer: {content.strip()[:120]!r}")
    value = float(found.group())
    if value != int(value) or not RATING_MIN <= value <= RATING_MAX:
        raise InvalidAnswer(f"the rating {found.group()} is not an integer from "
                            f"{RATING_MIN} to {RATING_MAX}")
    return int(value)
