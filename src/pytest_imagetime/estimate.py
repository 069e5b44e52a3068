"""The dry run: how many items need a judge call, and what they would cost.

Nothing is generated or judged. A stored judgment whose inputs are unchanged is reused by a
real run, so it costs nothing here either.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .cases import Case
from .judges.prices import cost_usd
from .judges.prompt import case_text, system_prompt
from .run_spec import RunSpec
from .runner import generation_request, image_key, judgment_key
from .store import find_stored_sheet, load_stored_judgment, with_setting

# The answer's size: a panel parse, 25 scores, verdicts with evidence, a rationale.
OUTPUT_TOKENS_PER_JUDGMENT = 1500
CHARS_PER_TOKEN = 4


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


def _stored(spec: RunSpec, case: Case) -> bool:
    """Would a real run reuse a stored judgment for this case?"""
    key = image_key(spec, generation_request(spec, case))
    # The file and its digest are enough: a dry run never decodes a sheet.
    stored = None if spec.regenerate else find_stored_sheet(spec.paths, case.id, key)
    if stored is None or spec.rejudge:
        return False
    return load_stored_judgment(spec.paths, case.id,
                               judgment_key(spec, case, stored.sha256)) is not None


def estimate(spec: RunSpec, cases: Iterable[Case]) -> Estimate:
    listed = list(cases)
    pending = [c for c in listed if not _stored(spec, c)]
    system = len(system_prompt()) // CHARS_PER_TOKEN
    tokens_in = sum(system + len(case_text(c, spec.setting)) // CHARS_PER_TOKEN
                    + image_tokens(spec.size) for c in pending)
    tokens_in *= spec.repeats
    tokens_out = OUTPUT_TOKENS_PER_JUDGMENT * len(pending) * spec.repeats
    price = getattr(spec.judge, "price", None)
    judged_by_model = "judge_model" in spec.judge.config() and spec.judge.name == "vlm"
    cost = cost_usd(price, tokens_in, tokens_out) if price else (0.0 if not judged_by_model
                                                                 else None)
    return Estimate(f"{with_setting(spec.model.name, spec.setting)} | {spec.judge.name}",
                    len(listed), len(pending),
                    tokens_in, tokens_out, cost)


def estimate_lines(estimates: Iterable[Estimate], judge_config: Mapping[str, Any]) -> list[str]:
    rows = list(estimates)
    width = max([len("run"), *(len(e.run) for e in rows)])
    lines = [f"{'run':<{width}} {'items':>6} {'to judge':>8} {'tokens in':>10} "
             f"{'tokens out':>10} {'est. cost':>10}"]
    total: float | None = 0.0
    for e in rows:
        cost = "unknown" if e.cost_usd is None else f"${e.cost_usd:.2f}"
        total = None if total is None or e.cost_usd is None else total + e.cost_usd
        lines.append(f"{e.run:<{width}} {e.items:>6} {e.to_judge:>8} {e.tokens_in:>10} "
                     f"{e.tokens_out:>10} {cost:>10}")
    lines.append("total: " + ("unknown (no price for judge model "
                              f"{judge_config.get('judge_model')!r}; give "
                              "--imagetime-judge-price=IN,OUT)" if total is None
                              else f"${total:.2f}") + "; nothing was generated or judged")
    return lines
