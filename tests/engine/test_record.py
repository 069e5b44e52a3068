"""Records survive the trip through user_properties (xdist, JUnit) unchanged."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.engine import record as record_module
from pytest_imagetime.engine.record import TREE_KEYS, ItemRecord
from pytest_imagetime.report.json_report import item_json
from pytest_imagetime.rubric.facts import ALL_DIMS, C_DIMS, FAILURE_LABELS

words = st.text("abcdefghij-", min_size=1, max_size=12)
maybe_mean = st.one_of(st.none(), st.floats(0, 10).map(lambda v: round(v, 4)))

records = st.builds(
    ItemRecord,
    key=words, case_id=words, case_file=words, domain=st.sampled_from(["Kitchen", "Pets"]),
    subcategory=words, concept=st.text(min_size=1, max_size=30), difficulty=words,
    variant=st.sampled_from([1, 2]),
    probed_levels=st.lists(st.sampled_from(["L0", "L1", "L6"]), unique=True).map(tuple),
    constraint=st.booleans(), model=words, judge=words,
    setting=st.sampled_from(["prompt-only", "scaffold"]), run_dir=words, case_sha256=words,
    judge_model=words, status=st.sampled_from(["passed", "failed", "error"]),
    error=st.one_of(st.none(), st.text(min_size=1, max_size=40)),
    scores=st.fixed_dictionaries({d: st.one_of(st.none(), st.integers(0, 10))
                                  for d in ALL_DIMS}),
    confidence=st.fixed_dictionaries({d: st.sampled_from([None, 0.25, 0.8, 1.0])
                                      for d in C_DIMS}),
    c_mean=maybe_mean, d_mean=maybe_mean, overall=maybe_mean,
    tree=st.fixed_dictionaries(dict.fromkeys(TREE_KEYS, maybe_mean)),
    gate_pass=st.one_of(st.none(), st.booleans()),
    labels=st.lists(st.sampled_from(sorted(FAILURE_LABELS)), unique=True).map(tuple),
    caps=st.lists(st.text(min_size=1, max_size=40), max_size=3).map(tuple),
    predicates_failed=st.lists(words, max_size=3).map(tuple),
    forbidden_observed=st.lists(words, max_size=2).map(tuple), predicates_checked=st.booleans(),
    image=st.one_of(st.none(), words), judgment=st.one_of(st.none(), words),
    cost_usd=st.floats(0, 100).map(lambda v: round(v, 4)),
    generation_cost_usd=st.one_of(st.none(), st.sampled_from([0.0, 0.04, 0.1325])),
    generation_s=maybe_mean, judge_s=maybe_mean, generated=st.booleans(), judged=st.booleans(),
)


@given(records)
def test_properties_round_trip(record: ItemRecord) -> None:
    props = record.to_properties()
    for name, value in props:
        assert name.startswith("imagetime.")
        assert isinstance(value, (str, int, float, bool))
    assert ItemRecord.from_properties(props) == record


def test_empty_lists_share_one_string_and_nulls_are_left_out() -> None:
    record = ItemRecord(key="k", case_id="c", case_file="f.yaml", domain="Pets",
                        subcategory="s", concept="x", difficulty="easy", variant=1,
                        probed_levels=(), constraint=False, model="m", judge="j",
                        setting="prompt-only", run_dir="r", scores={"C0": 3, "C1": None})
    props = dict(record.to_properties())
    assert props["imagetime.C0"] == 3 and "imagetime.C1" not in props
    assert "imagetime.c_mean" not in props and "imagetime.error" not in props
    assert props["imagetime.labels"] is props["imagetime.caps"]


def test_other_properties_are_not_a_record() -> None:
    assert ItemRecord.from_properties([("owner", "me")]) is None


def test_repeated_pairs_are_shared_and_keep_their_type() -> None:
    base = ItemRecord(key="a[m]", case_id="a", case_file="f.yaml", domain="Pets",
                      subcategory="s", concept="x", difficulty="easy", variant=1,
                      probed_levels=("L0",), constraint=True, model="m", judge="j",
                      setting="prompt-only", run_dir="r", scores={"C0": 1, "C1": 0},
                      gate_pass=True, cost_usd=0.0, generation_s=0.25)
    other = replace(base, key="b[m]", case_id="b", scores={"C0": True, "C1": 0},
                    cost_usd=0, generation_s=0.5)
    first, second = dict(base.to_properties()), other.to_properties()
    again = {pair[0]: pair for pair in base.to_properties()}
    shared = {pair[0]: pair for pair in second}
    # The same pair of two items is one tuple; an item's own values are its own.
    assert shared["imagetime.C1"] is again["imagetime.C1"]
    assert shared["imagetime.model"] is again["imagetime.model"]
    assert shared["imagetime.key"] is not again["imagetime.key"]
    # Equal but differently typed values (1 and True, 0.0 and 0) are never swapped.
    assert type(first["imagetime.C0"]) is int and type(shared["imagetime.C0"][1]) is bool
    assert type(first["imagetime.cost_usd"]) is float
    assert type(shared["imagetime.cost_usd"][1]) is int


def test_shared_pairs_are_bounded() -> None:
    base = ItemRecord(key="k", case_id="c", case_file="f.yaml", domain="Pets",
                      subcategory="s", concept="x", difficulty="easy", variant=1,
                      probed_levels=(), constraint=False, model="m", judge="j",
                      setting="prompt-only", run_dir="r")
    for n in range(record_module._SHARED_MAX + 10):
        rebuilt = ItemRecord.from_properties(replace(base, model=f"m{n}").to_properties())
        assert rebuilt is not None and rebuilt.model == f"m{n}"
    assert len(record_module._SHARED) <= record_module._SHARED_MAX


@given(records)
def test_rebuilt_scores_read_as_the_dicts_they_came_from(record: ItemRecord) -> None:
    rebuilt = ItemRecord.from_properties(record.to_properties())
    assert rebuilt is not None
    for kept, given_values in ((rebuilt.scores, record.scores), (rebuilt.tree, record.tree)):
        assert kept == dict(given_values) and dict(given_values) == kept
        assert sorted(kept) == sorted(given_values) and len(kept) == len(given_values)
        assert all(kept.get(k) == v for k, v in given_values.items())
        assert kept.get("nothing") is None and repr(kept) == repr(dict(kept))
    # The report holds plain dicts: JSON cannot write anything else.
    assert json.loads(json.dumps(item_json(rebuilt))) == item_json(record)


def test_fixed_keys_take_exactly_their_values() -> None:
    with pytest.raises(ValueError, match="takes 25 values, not 2"):
        record_module._Scores((1, 2))
    with pytest.raises(TypeError):
        hash(record_module._Scores((None,) * 25))
