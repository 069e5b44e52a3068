"""A judgment's JSON: what its record stores and what a resume reads back."""

from __future__ import annotations

import dataclasses
import json

from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.rubric.facts import ALL_DIMS, FAILURE_LABELS
from pytest_imagetime.rubric.judgment import Judgment, Verdict

texts = st.text(max_size=20)
verdicts = st.builds(Verdict, id=st.text("abcxyz_", min_size=1, max_size=8),
                     value=st.one_of(st.none(), st.booleans()), evidence=texts)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10, 10), texts,
              st.floats(allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(texts, inner, max_size=3)),
    max_leaves=12)
judgments = st.builds(
    Judgment, judge=texts, judge_model=texts, rubric_version=texts,
    prompt_version=st.one_of(st.none(), texts),
    scores=st.dictionaries(st.sampled_from(sorted(ALL_DIMS)),
                           st.one_of(st.none(), st.integers(0, 10))),
    confidence=st.dictionaries(st.sampled_from(sorted(ALL_DIMS)),
                               st.one_of(st.none(), st.floats(0, 1))),
    predicates=st.lists(verdicts, max_size=3).map(tuple),
    forbidden=st.lists(verdicts, max_size=3).map(tuple),
    labels=st.lists(st.sampled_from(sorted(FAILURE_LABELS)), max_size=3).map(tuple),
    rationale=texts, raw=json_values, date=texts, latency_s=st.floats(0, 100),
    tokens_in=st.integers(0, 10**6), tokens_out=st.integers(0, 10**6),
    cost_usd=st.floats(0, 10), evaluates_predicates=st.booleans())


@given(judgments)
def test_to_json_is_asdict_with_plain_mappings(judgment: Judgment) -> None:
    expected = dataclasses.asdict(judgment)
    expected["scores"] = dict(judgment.scores)
    expected["confidence"] = dict(judgment.confidence)
    data = judgment.to_json()
    assert data == expected
    assert list(data) == list(expected)  # the stored key order too
    assert json.dumps(data, sort_keys=True) == json.dumps(expected, sort_keys=True)


@given(judgments)
def test_a_stored_judgment_reads_back_equal(judgment: Judgment) -> None:
    text = json.dumps(judgment.to_json(), sort_keys=True)
    again = Judgment.from_json(json.loads(text))
    assert again == judgment
    assert json.dumps(again.to_json(), sort_keys=True) == text


def test_its_mappings_are_copies() -> None:
    judgment = Judgment(judge="j", judge_model="m", rubric_version="1", prompt_version=None,
                        scores={"C0": 3}, confidence={"C0": 0.5})
    data = judgment.to_json()
    data["scores"]["C0"] = 0
    data["confidence"]["C0"] = 0.0
    assert judgment.scores == {"C0": 3} and judgment.confidence == {"C0": 0.5}
