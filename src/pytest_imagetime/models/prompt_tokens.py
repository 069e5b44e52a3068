"""How many tokens a prompt takes in each text encoder of a diffusers pipeline, and whether
the pipeline cuts it: recorded with every sheet, so a judge's verdict on a sheet whose prompt
lost its last panels can be read as what it is.

Each tokenizer component is counted with the limit its pipeline applies to it: CLIP
tokenizers their ``model_max_length`` (77), the long encoders (T5, Qwen, Mistral) the call's
``max_sequence_length`` or, where the pipeline takes none, its ``tokenizer_max_length``.
Pipelines that wrap the prompt in a template of their own (Qwen-Image, HunyuanImage) count
the template's tokens that stay after the part they drop.
"""

from __future__ import annotations

import inspect
from typing import Any

TOKENIZER_COMPONENTS = ("tokenizer", "tokenizer_2", "tokenizer_3")
# Tokenizers that encode only the quoted text of a prompt (HunyuanImage's glyph encoder).
QUOTED_TEXT_ONLY = ("ByT5Tokenizer",)
_UNBOUNDED = 1_000_000  # transformers' model_max_length when a tokenizer declares none


def prompt_token_counts(pipe: Any, prompt: str,
                        max_sequence_length: int | None) -> list[dict[str, Any]]:
    """One entry per tokenizer: its component name and class, the prompt's tokens, the
    limit (None: the pipeline sets none) and whether the prompt is cut."""
    counts = []
    for component in TOKENIZER_COMPONENTS:
        found = getattr(pipe, component, None)
        tokenizer = getattr(found, "tokenizer", found)  # a processor wraps its tokenizer
        if tokenizer is None or not callable(tokenizer):
            continue
        kind = type(tokenizer).__name__
        if kind in QUOTED_TEXT_ONLY:
            continue
        limit = _limit(pipe, component, tokenizer, max_sequence_length)
        tokens = _count(pipe, component, tokenizer, prompt)
        counts.append({"tokenizer": component, "class": kind, "tokens": tokens, "limit": limit,
                       "truncated": limit is not None and tokens > limit})
    return counts


def _limit(pipe: Any, component: str, tokenizer: Any,
           max_sequence_length: int | None) -> int | None:
    if "CLIP" in type(tokenizer).__name__:
        return _bounded(getattr(tokenizer, "model_max_length", None))
    parameters = inspect.signature(type(pipe).__call__).parameters
    if "max_sequence_length" in parameters:
        if max_sequence_length is not None:
            return max_sequence_length
        default = parameters["max_sequence_length"].default
        return default if isinstance(default, int) else None
    if component == "tokenizer" and isinstance(getattr(pipe, "tokenizer_max_length", None), int):
        return int(pipe.tokenizer_max_length)
    return _bounded(getattr(tokenizer, "model_max_length", None))


def _bounded(value: Any) -> int | None:
    return value if isinstance(value, int) and value < _UNBOUNDED else None


def _count(pipe: Any, component: str, tokenizer: Any, prompt: str) -> int:
    template = getattr(pipe, "prompt_template_encode", None)
    dropped = getattr(pipe, "prompt_template_encode_start_idx", None)
    if component == "tokenizer" and isinstance(template, str) and isinstance(dropped, int):
        ids = tokenizer(template.format(prompt), truncation=False, verbose=False)["input_ids"]
        return max(0, len(ids) - dropped)
    return len(tokenizer(prompt, truncation=False, verbose=False)["input_ids"])
