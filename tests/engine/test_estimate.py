"""The dry run's estimate: image tokens, the cached prefix, what a run would cost."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.backends.prices import Price
from pytest_imagetime.cases.model import Case
from pytest_imagetime.engine.estimate import (
    CACHE_MIN_TOKENS,
    CACHE_STEP_TOKENS,
    CHARS_PER_TOKEN,
    OUTPUT_TOKENS_PER_JUDGMENT,
    Estimate,
    estimate,
    estimate_lines,
    image_tokens,
    shared_prefix_tokens,
)
from pytest_imagetime.engine.run_spec import RunSpec
from pytest_imagetime.engine.runner import generate_sheet, obtain_judgment
from pytest_imagetime.judges.base import Judge, SheetToJudge
from pytest_imagetime.judges.pixel import PixelJudge
from pytest_imagetime.judges.prompt import case_text, response_schema, system_prompt
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.rubric.judgment import Judgment
from pytest_imagetime.store.paths import RunPaths
from tests.builders import make_case


@pytest.mark.parametrize(("size", "tokens"), [(64, 255), (512, 255), (513, 765), (768, 765),
                                              (1024, 765), (4096, 765)])
def test_image_tokens_follow_the_tiles(size: int, tokens: int) -> None:
    assert image_tokens(size) == tokens


@given(st.integers(1, 5000), st.integers(1, 5000))
def test_image_tokens_never_fall_as_the_image_grows(a: int, b: int) -> None:
    small, large = sorted((a, b))
    assert image_tokens(small) <= image_tokens(large)


def test_the_shared_prefix_is_whole_cache_steps_of_the_system_prompt() -> None:
    tokens = shared_prefix_tokens()
    system = len(system_prompt()) // CHARS_PER_TOKEN
    if system < CACHE_MIN_TOKENS:
        assert tokens == 0
    else:
        assert tokens % CACHE_STEP_TOKENS == 0
        assert system - CACHE_STEP_TOKENS < tokens <= system


class _PricedJudge(Judge):
    """A judge calling a priced model (``price`` None: a model without a known price)."""

    calls_a_model = True

    def __init__(self, price: Price | None, response_format: str = "json_schema") -> None:
        self._price = price
        self._response_format = response_format

    @property
    def price(self) -> Price | None:
        return self._price

    @property
    def response_format(self) -> str:
        return self._response_format

    @property
    def name(self) -> str:
        return "vlm"

    @property
    def scored_dims(self) -> frozenset[str]:
        return frozenset()

    def config(self) -> Mapping[str, Any]:
        return {"judge_model": "some-model"}

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        raise AssertionError("a dry run judges nothing")


def _spec(tmp_path: Path, judge: Any, repeats: int = 1) -> RunSpec:
    model = ProceduralModel()
    return RunSpec(model=model, judge=judge,
                   paths=RunPaths(tmp_path, model.name, judge.name, "prompt-only"),
                   setting="prompt-only", size=512, run_seed=0, repeats=repeats)


CASES = [make_case(), make_case("kitchen-pour-water-2")]


def _tokens_in(cases: list[Case], json_object: bool = False) -> int:
    system = len(system_prompt()) // CHARS_PER_TOKEN
    total = 0
    for case in cases:
        chars = len(case_text(case, "prompt-only"))
        if json_object:
            chars += len(json.dumps(response_schema(case, "prompt-only")))
        total += system + chars // CHARS_PER_TOKEN + image_tokens(512)
    return total


def test_a_pixel_judge_costs_nothing(tmp_path: Path) -> None:
    result = estimate(_spec(tmp_path, PixelJudge()), CASES)
    assert result == Estimate("procedural | pixel", 2, 2, _tokens_in(CASES),
                              2 * OUTPUT_TOKENS_PER_JUDGMENT, 0.0,
                              shared_prefix_tokens(), False)


def test_a_priced_judge_is_priced_with_repeats_and_the_cache(tmp_path: Path) -> None:
    price = Price.of(2.0, 8.0, 0.5)
    result = estimate(_spec(tmp_path, _PricedJudge(price), repeats=3), CASES)
    calls = 2 * 3
    assert result.tokens_in == 3 * _tokens_in(CASES)
    assert result.tokens_out == calls * OUTPUT_TOKENS_PER_JUDGMENT
    assert result.tokens_cached == shared_prefix_tokens() * (calls - 1)
    assert result.cost_usd == pytest.approx(price.standard.cost(
        result.tokens_in, result.tokens_out, result.tokens_cached))
    batch = estimate(_spec(tmp_path, _PricedJudge(price), repeats=3), CASES, batch=True)
    assert batch.batch and batch.cost_usd is not None and result.cost_usd is not None
    assert batch.cost_usd < result.cost_usd


def test_json_object_mode_counts_each_case_schema(tmp_path: Path) -> None:
    plain = estimate(_spec(tmp_path, _PricedJudge(None)), CASES)
    json_object = estimate(_spec(tmp_path, _PricedJudge(None, "json_object")), CASES)
    assert json_object.tokens_in == _tokens_in(CASES, json_object=True) > plain.tokens_in


def test_an_unpriced_model_is_unknown_unless_nothing_is_called(tmp_path: Path) -> None:
    assert estimate(_spec(tmp_path, _PricedJudge(None)), CASES).cost_usd is None
    nothing = estimate(_spec(tmp_path, _PricedJudge(None)), [])
    assert (nothing.items, nothing.to_judge, nothing.tokens_in, nothing.cost_usd) == (0, 0, 0,
                                                                                      0.0)


def test_lines_total_the_costs() -> None:
    rows = [Estimate("a | vlm", 2, 1, 1000, 1500, 0.125, 0),
            Estimate("longer run | vlm", 3, 3, 3000, 4500, 1.0, 256)]
    lines = estimate_lines(rows, {"judge_model": "m"})
    assert lines[0].split() == ["run", "items", "to", "judge", "tokens", "in", "cached",
                                "tokens", "out", "est.", "cost"]
    assert lines[1].split() == ["a", "|", "vlm", "2", "1", "1000", "0", "1500", "$0.12"]
    assert lines[2].split() == ["longer", "run", "|", "vlm", "3", "3", "3000", "256", "4500",
                                "$1.00"]
    assert len({len(line) for line in lines[:3]}) == 1  # the columns line up
    assert lines[3].startswith("total: $1.12; cached: the shared prompt prefix")
    assert lines[3].endswith("nothing was generated or judged")


def test_an_unknown_cost_makes_the_total_unknown_and_says_how_to_price() -> None:
    rows = [Estimate("a", 1, 1, 1, 1, 0.5, batch=True), Estimate("b", 1, 1, 1, 1, None)]
    total = estimate_lines(rows, {"judge_model": "gpt-x"})[-1]
    assert "unknown" in estimate_lines(rows, {})[2]
    assert total.startswith("total: unknown (no price for judge model 'gpt-x'; give "
                            "--imagetime-judge-price=IN,OUT[,CACHED])")


def test_batch_rates_are_named_in_the_total() -> None:
    lines = estimate_lines([Estimate("a", 1, 1, 1, 1, 0.5, batch=True)], {})
    assert lines[-1].startswith("total: $0.50 at Batch API rates;")


def test_a_stored_judgment_is_not_counted_again(tmp_path: Path) -> None:
    spec = _spec(tmp_path, PixelJudge())
    case = CASES[0]
    sheet = generate_sheet(spec, case)
    obtain_judgment(spec, case, sheet)  # stores it, as a real run does
    result = estimate(spec, CASES)
    assert (result.items, result.to_judge) == (2, 1)
    assert result.tokens_in == _tokens_in(CASES[1:])
    assert estimate(replace(spec, rejudge=True), CASES).to_judge == 2
    assert estimate(replace(spec, regenerate=True), CASES).to_judge == 2
