"""The imperative prefix stripped from a prompt: only at the start, never to nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.research.baselines.prompts import strip_imperative


@pytest.mark.parametrize(("prompt", "caption"), [
    ("Create a photorealistic image of an Aardvark that is one month old.",
     "an Aardvark that is one month old."),
    ("Could you please draw a picture showing a dog", "a dog"),
    ("Give me: an image depicting rain", "rain"),
    ("Show me the old painting of a ship", "a ship"),
    ("please render a detailed 3d rendering of a cube", "a cube"),
    ("render a high quality detailed 3d rendering of a cube",  # four words: not a medium
     "a high quality detailed 3d rendering of a cube"),
    ("Produce a work of art in the Baroque style", "a work of art in the Baroque style"),
    ("Create a realistic map of europe in 1914", "a realistic map of europe in 1914"),
    ("A cat on a mat", "A cat on a mat"),
    ("Creative image of a cat", "Creative image of a cat"),  # "create" only as a word
    ("  Draw  ", "Draw"),  # nothing would be left: kept as it is
])
def test_prefixes_are_stripped(prompt: str, caption: str) -> None:
    assert strip_imperative(prompt) == caption


@given(st.text(st.sampled_from("abc dexyz.,:CreatImgeofshw"), max_size=60))
def test_the_caption_is_a_nonempty_tail_of_the_prompt(prompt: str) -> None:
    caption = strip_imperative(prompt)
    assert prompt.rstrip().endswith(caption)
    assert bool(caption) == bool(prompt.strip())


@given(st.sampled_from(["a dog", "the sea at dawn", "an old map"]),
       st.sampled_from(["Create", "generate", "Make", "Paint", "Give me", "show"]))
def test_any_verb_and_medium_give_the_same_caption(subject: str, verb: str) -> None:
    assert strip_imperative(f"{verb} an image of {subject}") == subject
    assert strip_imperative(f"{verb} {subject}") == subject
