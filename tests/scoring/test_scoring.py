"""Scoring and cap invariants, checked on arbitrary score tables."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_imagetime.rubric.caps import apply_caps, case_scopes
from pytest_imagetime.rubric.facts import (
    ALL_DIMS,
    C_DIMS,
    CAP_RULES,
    CAP_SCOPES,
    D_DIMS,
    FAILURE_LABELS,
    LEVELS,
    Applicability,
    CapScope,
    nullable_dims,
)
from pytest_imagetime.scoring.aggregate import Scored, aggregate
from pytest_imagetime.scoring.item import mean, node_score, score_item
from tests.builders import make_case

score = st.one_of(st.none(), st.integers(0, 10))
score_tables = st.fixed_dictionaries(dict.fromkeys(ALL_DIMS, score))
labels = st.lists(st.sampled_from(sorted(FAILURE_LABELS)), max_size=5)


def _within(value: float | None, low: float, high: float) -> bool:
    return value is None or low - 1e-9 <= value <= high + 1e-9


@given(score_tables)
def test_item_scores_stay_in_range_and_overall_between_families(
        scores: Mapping[str, int | None]) -> None:
    item = score_item(scores)
    for value in (item.c_mean, item.d_mean, item.overall, *item.tree.values()):
        assert _within(value, 0, 10)
    if item.c_mean is not None and item.d_mean is not None:
        assert item.overall is not None
        low, high = sorted((item.c_mean, item.d_mean))
        assert _within(item.overall, low, high)


@given(score_tables)
def test_nulls_are_omitted_never_zero(scores: Mapping[str, int | None]) -> None:
    item = score_item(scores)
    c_present = [v for d, v in scores.items() if d in C_DIMS and v is not None]
    if c_present:
        assert item.c_mean is not None
        assert math.isclose(item.c_mean, sum(c_present) / len(c_present))
    else:
        assert item.c_mean is None
    # Turning a null into a 0 can only lower a mean: so a null must not have counted as 0.
    nulls = [d for d, v in scores.items() if v is None and d in C_DIMS]
    if nulls and c_present and max(c_present) > 0:
        zeroed = {**scores, nulls[0]: 0}
        assert score_item(zeroed).c_mean < item.c_mean  # type: ignore[operator]


def test_tree_node_uses_one_family_when_the_other_is_null() -> None:
    l6 = next(n for n in LEVELS if n.key == "L6")
    assert node_score(l6, {"C8": 6, "D13": None}) == 6
    assert node_score(l6, {"C8": None, "D13": None}) is None
    assert node_score(l6, {"C8": 6, "D13": 9}) == 7.5


@given(score_tables, labels, st.frozensets(st.sampled_from(list(CAP_SCOPES))))
def test_caps_only_lower_and_keep_nulls(scores: Mapping[str, int | None], present: list[str],
                                        scopes: frozenset[CapScope]) -> None:
    capped, applied = apply_caps(scores, present, scopes)
    for dim in ALL_DIMS:
        before, after = scores[dim], capped[dim]
        if before is None:
            assert after is None
        else:
            assert after is not None and 0 <= after <= before
    for cap in applied:
        for dim, (before, after) in cap.lowered.items():
            assert after < before and capped[dim] is not None


def test_every_cap_rule_lowers_its_dims_and_records_why() -> None:
    everything = dict.fromkeys(ALL_DIMS, 10)
    for rule in CAP_RULES:
        capped, applied = apply_caps(everything, [next(iter(rule.labels))],
                                     frozenset(CAP_SCOPES))
        assert [a.rule for a in applied] == [rule.key]
        for dim, limit in rule.limits.items():
            assert capped[dim] == limit
            assert applied[0].lowered[dim] == (10, limit)


def test_constraint_cap_needs_a_constraint_case() -> None:
    scores = dict.fromkeys(ALL_DIMS, 10)
    case = make_case(constraint=False, quantity=True, occlusion=True)
    _, applied = apply_caps(scores, ["constraint_violation"], case_scopes(case, "scaffold"))
    assert applied == ()


def test_nullable_dims_follow_the_rubric() -> None:
    assert nullable_dims("prompt-only", Applicability(False, False, False)) == {
        "C1", "C8", "D13", "D11", "D12"}
    assert nullable_dims("scaffold", Applicability(True, True, True)) == frozenset()


items = st.lists(
    st.builds(
        Scored,
        key=st.text("abcdef", min_size=1, max_size=6),
        domain=st.sampled_from(["Kitchen", "Constraints"]),
        difficulty=st.sampled_from(["easy", "medium", "hard"]),
        status=st.sampled_from(["passed", "failed", "error"]),
        scores=score_tables,
        labels=st.lists(st.sampled_from(sorted(FAILURE_LABELS)), max_size=3).map(tuple),
        cost_usd=st.floats(0, 1),
    ),
    max_size=25,
    unique_by=lambda s: s.key,
)


@settings(max_examples=60)
@given(items, st.randoms())
def test_aggregate_does_not_depend_on_item_order(group: list[Scored],
                                                 rnd: random.Random) -> None:
    shuffled = list(group)
    rnd.shuffle(shuffled)
    assert aggregate(group) == aggregate(shuffled)


@settings(max_examples=60)
@given(items)
def test_aggregate_counts_errors_apart_and_ignores_their_scores(group: list[Scored]) -> None:
    result = aggregate(group)
    errors = [i for i in group if i.status == "error"]
    assert result["errors"] == len(errors)
    assert result["judged"] == len(group) - len(errors)
    judged = [i for i in group if i.status != "error"]
    assert result["overall"] == mean(score_item(i.scores).overall for i in sorted(
        judged, key=lambda i: i.key))
    for dim in D_DIMS:
        assert result["dims"][dim]["n"] == sum(i.scores[dim] is not None for i in judged)
    assert sum(v["n"] for v in result["by_domain"].values()) == len(group)


def test_l6_only_over_constraint_cases() -> None:
    plain = dict.fromkeys(ALL_DIMS, 8) | {"C8": None, "D13": None}
    constrained = dict.fromkeys(ALL_DIMS, 8) | {"C8": 2, "D13": 4}
    result = aggregate([Scored("a", "K", "easy", "passed", plain),
                        Scored("b", "C", "easy", "failed", constrained)])
    assert result["tree"]["L6"] == 3.0
    assert result["tree_n"]["L6"] == 1
