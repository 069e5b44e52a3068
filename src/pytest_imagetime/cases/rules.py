"""Writing rules for one case that a review of the cases found and a program can see.

Each rule is a function from a case to ``Finding``s (field path, message); ``checks`` turns
them into located warnings. docs/cases.md documents every rule, with the fix it implies.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from .model import Case

Field = tuple[str | int, ...]

# ---------------------------------------------------------------- prompt length

# The long text encoders of the presets cut at 512 tokens (FLUX.1-dev and Kontext's T5,
# Z-Image's Qwen3 and FLUX.2's Mistral, both with a chat template of about 40 tokens around
# the prompt); docs/cases.md lists every preset. 460 leaves room for the largest template.
PROMPT_TOKEN_BUDGET = 460
# No tokenizer ships with the package, so tokens are counted conservatively: the packaged
# prompts take one token per 3.65 characters or more in T5-like, Qwen and CLIP vocabularies.
CHARS_PER_TOKEN = 3.0


def estimated_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


# ---------------------------------------------------------------- small text and digits

SMALL_TEXT_TAG = "small-text"
_PANEL_REFERENCE = re.compile(
    r"\b(?:panels?|stages?|t)\s*[1-4](?:\s*(?:,|and|or|to)\s*[1-4])*\b", re.IGNORECASE)
# A quotation, not a possessive: the marks stand apart from letters on their outer sides.
_QUOTED = re.compile(r"(?<![A-Za-z])['\"‘“][^'\"’”]{1,40}['\"’”](?![A-Za-z])")
_DIGIT = re.compile(r"\d")
_ANGLE = re.compile(r"\d+\s*(?:degrees|°)", re.IGNORECASE)  # an angle is seen, not read


def needs_reading(text: str) -> bool:
    """Whether deciding ``text`` means reading digits or written words in the image: a number
    that is not a panel reference (a display, a clock, a jersey, a scale mark) or a quoted word."""
    rest = _ANGLE.sub(" ", _PANEL_REFERENCE.sub(" ", text))
    return bool(_DIGIT.search(rest) or _QUOTED.search(rest))


def _without_numbers(text: str) -> str:
    return " ".join(re.sub(r"\d+(?:[:.,]\d+)*", "#", _PANEL_REFERENCE.sub(" ", text)).split())


# ---------------------------------------------------------------- vocabularies

_VAGUE_KEEP = re.compile(r"\bkeep\b[^.;:]*?\b(?:everything|all)\s+else\b", re.IGNORECASE)
_TRANSITION = re.compile(r"\b(?:transition|scene change|cut to|cross-fade|dissolve)\b",
                         re.IGNORECASE)
_SAME_SCENE = re.compile(r"\b(?:of|in) the same scene\b", re.IGNORECASE)
_PASTED_ARTICLE = re.compile(r"\b(?:the|a|an)\s+(?:the|a|an)\b", re.IGNORECASE)
_FLAT_STYLE = re.compile(r"\b(?:flat|pixel|pixel-art|vector|cartoon|cel|voxel|8-bit|16-bit)\b",
                         re.IGNORECASE)
# Material and optical effects that flat colour, pixels or cartoon line work cannot show.
_SHEEN = re.compile(
    r"\b(?:gloss\w*|shiny|shinier|shiniest|sheen|glint\w*|glisten\w*|gleam\w*|translucen\w*|"
    r"transparen\w*|see-through|blur\w*|fuzzy|iridescen\w*|specular|lustr\w*)\b", re.IGNORECASE)

_DETERMINER = r"(?:the|a|an|its|his|her|their|one|both|two|three|this|that|each)"
_CHANGE = (
    r"(?:lift(?:s|ed|ing)?|picks?|picked|picking|press(?:es|ed|ing)?|push(?:es|ed|ing)?|"
    r"pull(?:s|ed|ing)?|mov(?:es|ed|ing)|open(?:s|ed|ing)|clos(?:es|ed|ing)|"
    r"remov(?:es|ed|ing)|tak(?:es|en|ing)|took|turn(?:s|ed|ing)|fold(?:s|ed|ing)|"
    r"pour(?:s|ed|ing)|fill(?:s|ed|ing)|plac(?:es|ed|ing)|puts?|drop(?:s|ped|ping)|"
    r"tilt(?:s|ed|ing)|brok(?:e|en)|break(?:s|ing)|cuts?|melt(?:s|ed|ing)|flip(?:s|ped|ping)|"
    r"switch(?:es|ed|ing)|carr(?:y|ies|ied|ying)|grab(?:s|bed|bing)|grip(?:s|ped|ping)|"
    r"rais(?:es|ed|ing)|lower(?:s|ed|ing)|swing(?:s|ing)?|swung|slid(?:e|es|ing)|"
    r"spill(?:s|ed|ing)|tip(?:s|ped|ping)|knock(?:s|ed|ing)|toggl(?:es|ed|ing)|"
    r"flick(?:s|ed|ing)|unfold(?:s|ed|ing)|unzip(?:s|ped|ping)|insert(?:s|ed|ing)|handed|"
    r"gives?|given|lays?|laid|sets|tear(?:s|ing)|tore|torn|wip(?:es|ed|ing)|stir(?:s|red|ring)|"
    r"shak(?:es|en|ing))")
# Words after which a noun is the place of the action, not what it acts on.
_NOT_OBJECT = (r"(?:on|off|in|into|onto|at|to|toward|towards|from|between|beside|next|near|"
               r"under|over|above|below|across|along|around|through|past|and|with|by|of|up|"
               r"down|out|away|back)")
_STABLE = re.compile(r"\b(?:stays?|remains?|unchanged|untouched|same|still|not|no|never|"
                     r"unmoved|in place|undisturbed|without|only)\b", re.IGNORECASE)
_CLAUSES = re.compile(r"[;.]|, (?:and|while|as|then) |, ")
_ENTITY_STOP = frozenset(
    "a an the of on in at to with and or for from by into onto its his her their one two "
    "three four five six each that this".split())
_COLLECTIVE = re.compile(r"^(?:(?:a|an|the)\s+)?(?:pair|set|stack|row|pile|line|bunch|group|"
                         r"couple|few|handful|heap)\s+of\s+", re.IGNORECASE)
_PHRASE_END = re.compile(
    r"\s(?:(?:right|left) of|on|in|at|of|with|beside|behind|near|next|by|under|over|above|"
    r"below|against|along|across|leaning|hanging|standing|lying|lies|propped|that|which|from|"
    r"to|for|where|inside|outside|between|around|resting|sitting|stacked|folded|pulled|placed|"
    r"parked|set|mounted|fixed|beyond|running|tied|pushed|upside|hinged)\s")


@dataclass(frozen=True)
class Finding:
    field: Field
    message: str


def findings(case: Case) -> Iterator[Finding]:
    """Every finding of the review rules on one case."""
    yield from prompt_length(case)
    yield from vague_keep(case)
    yield from template_against_concept(case)
    yield from style_clash(case)
    yield from small_text(case)
    yield from non_target_changes(case)


def prompt_length(case: Case) -> Iterator[Finding]:
    tokens = estimated_tokens(case.prompt)
    if tokens > PROMPT_TOKEN_BUDGET:
        yield Finding(("prompt",), (
            f"the prompt takes about {tokens} text-encoder tokens ({len(case.prompt)} "
            f"characters at {CHARS_PER_TOKEN:g} a token), over the {PROMPT_TOKEN_BUDGET} that "
            f"every long-text preset keeps whole (FLUX.1-dev, Z-Image and FLUX.2 cut at 512 "
            f"with their templates); shorten it so no panel is cut off"))


def vague_keep(case: Case) -> Iterator[Finding]:
    match = _VAGUE_KEEP.search(case.prompt)
    if match:
        yield Finding(("prompt",), (
            f"{match.group(0)!r} names nothing a judge can check; name what must stay the "
            f"same (the non_targets, the scene's fixed parts, lighting, camera)"))


def template_against_concept(case: Case) -> Iterator[Finding]:
    if _TRANSITION.search(case.concept):
        match = _SAME_SCENE.search(case.prompt)
        if match:
            yield Finding(("prompt",), (
                f"{case.concept!r} goes from one scene to another, but the prompt says "
                f"{match.group(0)!r}; say what the four panels are instead (four moments of "
                f"a transition from the first scene to the second)"))
    for name, text in (("prompt", case.prompt), *((f"states.{s}", t)
                                                  for s, t in case.states.items())):
        match = _PASTED_ARTICLE.search(text)
        if match:
            path: Field = ("prompt",) if name == "prompt" else ("states", name[7:])
            yield Finding(path, (
                f"{match.group(0)!r}: an entity phrase pasted after an article; write the "
                f"sentence around the noun"))


def style_clash(case: Case) -> Iterator[Finding]:
    style = _FLAT_STYLE.search(case.setup.style)
    if not style:
        return
    checked: list[tuple[Field, str]] = [(("prompt",), case.prompt)]
    checked += [(("states", s), t) for s, t in case.states.items()]
    checked += [(("predicates", i, "text"), p.text) for i, p in enumerate(case.predicates)]
    checked += [(("temporal_constraints", i), t) for i, t in enumerate(case.temporal_constraints)]
    checked += [(("forbidden", i), f.text) for i, f in enumerate(case.forbidden)]
    for path, text in checked:
        match = _SHEEN.search(text)
        if match:
            yield Finding(path, (
                f"{match.group(0)!r} under the style {case.setup.style!r}: {style.group(0)} "
                f"drawing cannot show gloss, shine, blur or transparency; describe the change "
                f"by colour, shape, outline or drawn marks"))


def small_text(case: Case) -> Iterator[Finding]:
    for i, p in enumerate(case.predicates):
        if needs_reading(p.text) and SMALL_TEXT_TAG not in p.tags:
            yield Finding(("predicates", i, "text"), (
                f"{p.text!r} is decided by reading digits or text in the image; tag it "
                f"'tags: [{SMALL_TEXT_TAG}]' so the judge and the report show it, or make the "
                f"change visible without reading"))
    for kind, texts in (("states", list(case.states.items())),
                        ("predicates", [(p.stage, p.text) for p in case.predicates
                                        if p.stage != "all"])):
        yield from _number_only_difference(kind, texts)


def _number_only_difference(kind: str,
                            texts: Sequence[tuple[str, str]]) -> Iterator[Finding]:
    for (stage_a, a), (stage_b, b) in itertools.pairwise(texts):
        if stage_a != stage_b and a != b and _without_numbers(a) == _without_numbers(b):
            yield Finding((kind,), (
                f"{stage_a} and {stage_b} differ only in a number ({a!r} / {b!r}); a small "
                f"digit is not a visible change: add one a judge sees without reading"))


# ---------------------------------------------------------------- non_targets that change


def _entity_words(phrase: str) -> list[str]:
    """The words that name an entity: the phrase up to its first place or relative clause,
    less articles and counts ("a pair of brown leather boots lying ..." -> brown, leather,
    boots)."""
    text = _COLLECTIVE.sub("", phrase.lower().strip())
    head = _PHRASE_END.split(f" {text} ")[0]
    return [w for w in re.findall(r"[a-z]+(?:-[a-z]+)*", head) if w not in _ENTITY_STOP]


def _noun_forms(noun: str) -> set[str]:
    forms = {noun}
    if noun.endswith("ies"):
        forms.add(noun[:-3] + "y")
    elif noun.endswith(("ches", "shes", "xes", "sses")):
        forms.add(noun[:-2])
    elif noun.endswith("s") and not noun.endswith("ss"):
        forms.add(noun[:-1])
    else:
        forms.update((noun + "s", noun + "es"))
    return forms


def _others_text(entities: Mapping[str, Sequence[str]], index: int) -> str:
    return " ".join(phrase.lower() for role, phrases in entities.items()
                    for i, phrase in enumerate(phrases)
                    if not (role == "non_targets" and i == index))


def non_target_changes(case: Case) -> Iterator[Finding]:
    """A non_target must persist unchanged; one that a later state or predicate acts on (lifts,
    presses, holds in a hand, ...) is a target, tool or obstacle filed in the wrong role."""
    later: list[tuple[str, str]] = [(f"states.{s}", case.states[s]) for s in ("t2", "t3", "t4")
                                    if s in case.states]
    later += [(f"predicates[{i}]", p.text) for i, p in enumerate(case.predicates)
              if p.stage != "t1"]
    for index, phrase in enumerate(case.entities.get("non_targets", ())):
        words = _entity_words(phrase)
        if not words:
            continue
        forms = _noun_forms(words[-1])
        nouns = "|".join(sorted(map(re.escape, forms), key=len, reverse=True))
        others = _others_text(case.entities, index)
        if any(re.search(rf"\b{re.escape(f)}\b", others) for f in forms):
            # Another entity shares the noun ("the red pen" beside the target "blue pen"):
            # only the words that tell them apart identify this one.
            if len(words) < 2:
                continue
            noun = "".join(rf"{re.escape(m)}[ -]" for m in words[-3:-1]) + rf"(?:{nouns})"
        else:
            noun = rf"(?:{nouns})"
        modifiers = rf"(?:\s+(?!{_NOT_OBJECT}\b)[a-z'-]+){{0,3}}?"
        patterns = (
            rf"\b{_CHANGE}\s+{_DETERMINER}\b{modifiers}\s+{noun}\b",
            rf"\b{noun}\b(?:\s+(?!and\b)[a-z'-]+){{0,2}}?\s+(?:is|are|has been|have been|gets?|"
            rf"now)\s+(?!clos|open){_CHANGE}\b",
            rf"\b{noun}\b(?:\s+(?!and\b)[a-z'-]+){{0,3}}?\s+(?:is|are|now|lies|rests)\s+in\s+"
            rf"(?:his|her|their|its|the \w+'s)\s+(?:right |left )?(?:hand|hands|paw|paws|"
            rf"mouth|beak|gripper)\b",
        )
        compiled = [re.compile(p, re.IGNORECASE) for p in patterns]
        hit = _first_change(later, compiled)
        if hit:
            where, clause = hit
            yield Finding(("entities", "non_targets", index), (
                f"{phrase!r} is a non_target (it must stay unchanged), but {where} changes it: "
                f"{clause!r}; file it as a target, tool or obstacle, or keep it unchanged"))


def _first_change(texts: Sequence[tuple[str, str]],
                  patterns: Sequence[re.Pattern[str]]) -> tuple[str, str] | None:
    for where, text in texts:
        for clause in _CLAUSES.split(text):
            if _STABLE.search(clause):
                continue
            if any(p.search(clause) for p in patterns):
                return where, clause.strip()
    return None
