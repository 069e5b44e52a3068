"""Prompt token counts per text encoder, with the limit each pipeline applies."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.models.prompt_tokens import prompt_token_counts


class _Words:
    """A tokenizer of one token per word; its class name decides how its limit is read."""

    def __init__(self, model_max_length: int = 1_000_000_000) -> None:
        self.model_max_length = model_max_length
        self.calls: list[str] = []

    def __call__(self, text: str, truncation: bool, verbose: bool) -> dict[str, list[int]]:
        assert truncation is False and verbose is False
        self.calls.append(text)
        return {"input_ids": list(range(len(text.split())))}


class CLIPTokenizer(_Words):
    pass


class T5TokenizerFast(_Words):
    pass


class ByT5Tokenizer(_Words):
    pass


class _Processor:
    def __init__(self, tokenizer: _Words) -> None:
        self.tokenizer = tokenizer


class FluxLike:
    """A pipeline that takes ``max_sequence_length`` (default 512)."""

    def __init__(self, **components: Any) -> None:
        for name, value in components.items():
            setattr(self, name, value)

    def __call__(self, prompt: str, max_sequence_length: int = 512) -> None:
        pass


class QwenLike:
    """A pipeline with no ``max_sequence_length`` that wraps the prompt in a template."""

    tokenizer_max_length = 1024
    prompt_template_encode = "system says hello. user: {} end"
    prompt_template_encode_start_idx = 3

    def __init__(self, tokenizer: _Words) -> None:
        self.tokenizer = tokenizer

    def __call__(self, prompt: str) -> None:
        pass


def _words(n: int) -> str:
    return " ".join(["w"] * n)


def test_clip_and_t5_counts_with_their_limits() -> None:
    pipe = FluxLike(tokenizer=CLIPTokenizer(77), tokenizer_2=T5TokenizerFast())
    counts = prompt_token_counts(pipe, _words(100), max_sequence_length=None)
    assert counts == [
        {"tokenizer": "tokenizer", "class": "CLIPTokenizer", "tokens": 100, "limit": 77,
         "truncated": True},
        {"tokenizer": "tokenizer_2", "class": "T5TokenizerFast", "tokens": 100, "limit": 512,
         "truncated": False},
    ]


def test_the_calls_max_sequence_length_overrides_the_default() -> None:
    pipe = FluxLike(tokenizer_2=T5TokenizerFast())
    (count,) = prompt_token_counts(pipe, _words(300), max_sequence_length=256)
    assert (count["limit"], count["truncated"]) == (256, True)


def test_a_template_counts_what_stays_after_the_dropped_part() -> None:
    tokenizer = _Words()
    (count,) = prompt_token_counts(QwenLike(tokenizer), _words(10), max_sequence_length=None)
    assert tokenizer.calls == [f"system says hello. user: {_words(10)} end"]
    assert count["tokens"] == 4 + 10 + 1 - 3
    assert count["limit"] == 1024


def test_processors_are_unwrapped_and_glyph_encoders_and_gaps_skipped() -> None:
    pipe = FluxLike(tokenizer=_Processor(CLIPTokenizer(77)), tokenizer_2=ByT5Tokenizer(),
                    tokenizer_3="not callable")
    (count,) = prompt_token_counts(pipe, "a b", None)
    assert (count["tokenizer"], count["class"], count["tokens"]) == ("tokenizer",
                                                                   "CLIPTokenizer", 2)
    assert prompt_token_counts(FluxLike(), "a b", None) == []


def test_an_unbounded_tokenizer_has_no_limit() -> None:
    class Plain:
        def __init__(self, tokenizer: _Words) -> None:
            self.tokenizer = tokenizer

        def __call__(self, prompt: str) -> None:
            pass

    (count,) = prompt_token_counts(Plain(_Words()), _words(5000), None)
    assert (count["limit"], count["truncated"]) == (None, False)
    (bounded,) = prompt_token_counts(Plain(_Words(300)), _words(301), None)
    assert (bounded["limit"], bounded["truncated"]) == (300, True)


@given(st.integers(0, 200), st.integers(1, 200))
def test_truncated_means_more_tokens_than_the_limit(words: int, limit: int) -> None:
    pipe = FluxLike(tokenizer=CLIPTokenizer(limit))
    (count,) = prompt_token_counts(pipe, _words(words), None)
    assert count["tokens"] == words
    assert count["truncated"] is (words > limit)
