"""The dry run: how many items need a judge call, and what they would cost.

Nothing is generated or judged. A stored judgment whose inputs are unchanged is reused by a
real run, so it costs nothing here either.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..backends.prices import Price
from ..cases.model import Case
from ..judges.prompt import case_text, response_schema, system_prompt
from ..store.judgments import load_stored_judgment
from ..store.paths import with_setting
from ..store.resume import repriced_judgment
from ..store.sheets import find_stored_sheet
from .run_spec import RunSpec
from .runner import generation_request, image_key, judgment_key

# The answer's size: a panel parse, 25 scores, verdicts with evidence, a rationale.
OUTPUT_TOKENS_PER_JUDGMENT = 1500
CHARS_PER_TOKEN = 4
# OpenAI caches a prompt prefix of at least 1024 tokens, in steps of 128 tokens.
CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128


def image_tokens(size: int) -> int:
    """Tokens of one square image at high detail: 512-px tiles after fitting 768 px."""
    side = min(size, 768)
    tiles = math.ceil(side / 512) ** 2
    return 85 + 170 * tiles


@dataclass(frozen=True)
class Estimate:
    run: str
    items: int
    to_judge: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    tokens_cached: int = 0  # the part of tokens_in expected from the provider's prompt cache
    batch: bool = False  # priced at the Batch API's rates


def _stored(spec: RunSpec, case: Case) -> bool:
    """Would a real run reuse a stored judgment for this case?"""
    key = image_key(spec, generation_request(spec, case))
    # The file and its digest are enough: a dry run never decodes a sheet.
    stored = None if spec.regenerate else find_stored_sheet(spec.paths, case.id, key)
    if stored is None or spec.rejudge:
        return False
    key = judgment_key(spec, case, stored.sha256)
    return (load_stored_judgment(spec.paths, case.id, key) is not None
            or repriced_judgment(spec.paths, case.id, key, 0, write=False) is not None)


def shared_prefix_tokens() -> int:
    """Tokens of what every call starts with (the system prompt: the case, and in json_object
    mode its own schema, follow it), as far as a prompt cache can hold them; 0 below its
    minimum."""
    tokens = len(system_prompt()) // CHARS_PER_TOKEN
    if tokens < CACHE_MIN_TOKENS:
        return 0
    return tokens // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS


def estimate(spec: RunSpec, cases: Iterable[Case], batch: bool = False) -> Estimate:
    listed = list(cases)
    pending = [c for c in listed if not _stored(spec, c)]
    json_object = getattr(getattr(spec.judge, "options", None), "response_format",
                          None) == "json_object"
    system = len(system_prompt()) // CHARS_PER_TOKEN

    def case_tokens(case: Case) -> int:
        chars = len(case_text(case, spec.setting))
        if json_object:  # the case's own answer schema goes in the message
            chars += len(json.dumps(response_schema(case, spec.setting)))
        return chars // CHARS_PER_TOKEN

    tokens_in = sum(system + case_tokens(c) + image_tokens(spec.size) for c in pending)
    tokens_in *= spec.repeats
    calls = len(pending) * spec.repeats
    # Every call after the first finds the shared prefix in the provider's cache.
    tokens_cached = shared_prefix_tokens() * max(0, calls - 1)
    tokens_out = OUTPUT_TOKENS_PER_JUDGMENT * calls
    # A judge that calls a priced model has a ``price`` (None when unknown); one that does
    # not (pixel, replay) costs nothing.
    calls_a_model = hasattr(spec.judge, "price")
    price: Price | None = getattr(spec.judge, "price", None)
    if price is not None:
        cost: float | None = price.rates(batch).cost(tokens_in, tokens_out, tokens_cached)
    else:
        cost = None if calls_a_model and calls else 0.0
    return Estimate(f"{with_setting(spec.model.name, spec.setting)} | {spec.judge.name}",
                    len(listed), len(pending),
                    tokens_in, tokens_out, cost, tokens_cached, batch)


def estimate_lines(estimates: Iterable[Estimate], judge_config: Mapping[str, Any]) -> list[str]:
    rows = list(estimates)
    width = max([len("run"), *(len(e.run) for e in rows)])
    lines = [f"{'run':<{width}} {'items':>6} {'to judge':>8} {'tokens in':>10} "
             f"{'cached':>10} {'tokens out':>10} {'est. cost':>10}"]
    total: float | None = 0.0
    for e in rows:
        cost = "unknown" if e.cost_usd is None else f"${e.cost_usd:.2f}"
        total = None if total is None or e.cost_usd is None else total + e.cost_usd
        lines.append(f"{e.run:<{width}} {e.items:>6} {e.to_judge:>8} {e.tokens_in:>10} "
                     f"{e.tokens_cached:>10} {e.tokens_out:>10} {cost:>10}")
    tier = (" at Batch API rates" if any(e.batch for e in rows) else "")
    lines.append("total: " + ("unknown (no price for judge model "
                              f"{judge_config.get('judge_model')!r}; give "
                              "--imagetime-judge-price=IN,OUT[,CACHED])" if total is None
                              else f"${total:.2f}{tier}")
                 + "; cached: the shared prompt prefix, expected from the provider's prompt "
                   "cache after the first call; nothing was generated or judged")
    return lines
