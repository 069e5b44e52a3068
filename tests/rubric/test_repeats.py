"""Repeated judging: the combination rule and a whole run with three repeats."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.rubric.facts import RUBRIC_VERSION
from pytest_imagetime.rubric.judgment import Judgment, Verdict
from pytest_imagetime.rubric.repeats import combine, lower_median
from tests.builders import case_dict, write_case_file
from tests.fake_openai import ChatServer, ServerState, chat_server


def _judgment(c0: int, holds: bool | None, labels: tuple[str, ...] = ()) -> Judgment:
    return Judgment("vlm", "m", RUBRIC_VERSION, "p", {"C0": c0, "C1": None},
                    confidence={"C0": 0.5}, predicates=(Verdict("p1", holds, "e"),),
                    forbidden=(Verdict("f1", not holds if holds is not None else None),),
                    labels=labels, cost_usd=0.01, tokens_in=10, tokens_out=5,
                    evaluates_predicates=True)


@given(st.lists(st.integers(0, 10), min_size=1, max_size=9))
def test_lower_median_lies_within_and_leans_low(values: list[int]) -> None:
    m = lower_median(values)
    assert min(values) <= m <= max(values)
    assert sum(v < m for v in values) <= len(values) // 2


def test_combination_is_conservative() -> None:
    combined = combine([_judgment(8, True, ("copied_phases",)), _judgment(6, False),
                        _judgment(9, True)])
    assert combined.scores["C0"] == 8 and combined.scores["C1"] is None
    assert combined.predicates[0].value is True  # two of three
    assert combined.forbidden[0].value is False
    assert combined.labels == ()  # one of three
    tied = combine([_judgment(8, True, ("copied_phases",)), _judgment(4, False)])
    assert tied.scores["C0"] == 4  # between two scores, the lower
    assert tied.predicates[0].value is False  # no majority: not established
    assert tied.labels == ("copied_phases",)  # named by half
    assert tied.cost_usd == pytest.approx(0.02) and tied.tokens_in == 20


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState()) as running:
        yield running


def test_a_run_with_three_repeats(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                  server: ChatServer) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    args = ["k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
            "--imagetime-judge-repeats=3", "--imagetime-judge-price=2,8"]
    pytester.runpytest(*args).assert_outcomes(passed=1)
    assert len(server.state.requests) == 3
    judgments = sorted(p.name for p in pytester.path.rglob("judgments/*.json"))
    assert judgments == ["kitchen-pour-water-1.json", "kitchen-pour-water-1@r2.json",
                         "kitchen-pour-water-1@r3.json"]
    report = json.loads(next(pytester.path.rglob("report.json")).read_text())
    assert report["manifest"]["judge_repeats"] == 3
    assert report["aggregate"]["cost_usd"] == pytest.approx(3 * 0.007)
    pytester.runpytest(*args).assert_outcomes(passed=1)
    assert len(server.state.requests) == 3  # all three reused
