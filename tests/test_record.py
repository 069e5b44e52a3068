"""Records survive the trip through user_properties (xdist, JUnit) unchanged."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.record import TREE_KEYS, ItemRecord
from pytest_imagetime.rubric import ALL_DIMS, FAILURE_LABELS

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
    c_mean=maybe_mean, d_mean=maybe_mean, overall=maybe_mean,
    tree=st.fixed_dictionaries(dict.fromkeys(TREE_KEYS, maybe_mean)),
    gate_pass=st.one_of(st.none(), st.booleans()),
    labels=st.lists(st.sampled_from(sorted(FAILURE_LABELS)), unique=True).map(tuple),
    caps=st.lists(st.text(min_size=1, max_size=40), max_size=3).map(tuple),
    predicates_failed=st.lists(words, max_size=3).map(tuple),
    forbidden_observed=st.lists(words, max_size=2).map(tuple), predicates_checked=st.booleans(),
    image=st.one_of(st.none(), words), judgment=st.one_of(st.none(), words),
    cost_usd=st.floats(0, 100).map(lambda v: round(v, 4)),
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
