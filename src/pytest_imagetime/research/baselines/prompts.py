"""The prompt without its imperative prefix, so that it reads like a caption.

TempViz prompts open with an order to the model: "Create a photorealistic image of an Aardvark
that is one month old." A captioner describes what is shown ("an aardvark standing in the
grass"), never the order nor the medium, so caption similarity compares the caption with what
follows them: "an Aardvark that is one month old."

Two parts are removed, both only at the start:

1. an imperative: create, generate, produce, make, draw, render, paint, depict, design,
   illustrate, sketch, imagine, give me, show (me), with an optional "please" and "can you";
2. right after it, a medium phrase: "a/an/the", up to three words, then image, picture,
   photo, photograph, illustration, rendering, render, drawing or painting, then "of",
   "showing" or "depicting".

The TempViz paper strips "the imperative" only (its templates' verbs: Give me, Produce,
Generate, Create); ``strip_order`` does that and is the default of ``imagetime baseline``
(``--strip imperative``); ``strip_imperative`` also drops the medium phrase
(``--strip imperative-and-medium``).

"Produce a work of art ..." and "Create a realistic map of europe in 1914" keep "a work of
art ..." and "a realistic map of ...": those say what is shown, not the medium. A prompt that
opens with neither part is kept as it is, and so is one that would be left empty.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

VERBS = ("create", "generate", "produce", "make", "draw", "render", "paint", "depict", "design",
         "illustrate", "sketch", "imagine", r"give\s+me", r"show(?:\s+me)?")
MEDIA = ("image", "picture", "photo", "photograph", "illustration", "rendering", "render",
         "drawing", "painting")

IMPERATIVE = re.compile(
    r"^\s*(?:(?:can|could)\s+you\s+)?(?:please\s+)?(?:" + "|".join(VERBS) + r")\b[\s,:]*",
    re.IGNORECASE)
MEDIUM = re.compile(
    r"^(?:an?|the)\s+(?:[\w-]+\s+){0,3}?(?:" + "|".join(MEDIA) + r")s?\s+"
    r"(?:of|showing|depicting)\b\s*", re.IGNORECASE)


def strip_imperative(prompt: str) -> str:
    """``prompt`` without a leading imperative and the medium phrase after it."""
    order = IMPERATIVE.match(prompt)
    if order is None:
        return prompt.strip()
    rest = prompt[order.end():]
    medium = MEDIUM.match(rest)
    if medium is not None:
        rest = rest[medium.end():]
    return rest.strip() or prompt.strip()


def strip_order(prompt: str) -> str:
    """``prompt`` without a leading imperative only: "Create a photorealistic image of X"
    becomes "a photorealistic image of X"."""
    order = IMPERATIVE.match(prompt)
    if order is None:
        return prompt.strip()
    return prompt[order.end():].strip() or prompt.strip()


def keep_prompt(prompt: str) -> str:
    return prompt.strip()


# What ``--strip`` removes from the start of a prompt before it is compared.
STRIPS: Mapping[str, Callable[[str], str]] = {
    "imperative": strip_order,  # the paper's setting
    "imperative-and-medium": strip_imperative,
    "none": keep_prompt,
}
DEFAULT_STRIP = "imperative"
