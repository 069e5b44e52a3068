"""Drift canaries: the same sheets judged every run, a failing canary reported, not fatal."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pytest_imagetime.cases.loading import builtin_cases_dir, case_files, load_case_file
from pytest_imagetime.engine.canaries import (
    CANARY_DOMAINS,
    CANARY_VARIANTS,
    NOT_STORED,
    canary_cases,
    run_canaries,
)
from pytest_imagetime.judges.base import SheetToJudge
from pytest_imagetime.judges.pixel import PixelJudge
from pytest_imagetime.rubric.facts import ALL_DIMS, RUBRIC_VERSION
from pytest_imagetime.rubric.judgment import JudgeError, Judgment


def test_one_case_per_canary_domain_the_first_by_id() -> None:
    cases = canary_cases()
    assert [c.domain for c in cases] == list(CANARY_DOMAINS)
    assert cases == canary_cases()
    packaged = [c for f in case_files([builtin_cases_dir()]) for c in load_case_file(f)]
    for case in cases:
        assert case.id == min(c.id for c in packaged if c.domain == case.domain)


@functools.cache
def _pixel_results() -> tuple[dict[str, Any], ...]:
    return tuple(run_canaries(PixelJudge(), "prompt-only"))


def test_every_canary_sheet_is_judged_and_scored() -> None:
    results = _pixel_results()
    expected = [(c.id, v) for c in canary_cases() for v in CANARY_VARIANTS]
    assert [(r["case_id"], r["variant"]) for r in results] == expected
    for entry in results:
        assert "error" not in entry
        assert len(entry["image_sha256"]) == 64
        assert entry["judge_model"].startswith("pixel-metrics/")
        assert entry["overall"] is not None and 0.0 <= entry["overall"] <= 10.0
        assert set(entry["scores"]) == set(ALL_DIMS)
        assert entry["labels"] == sorted(entry["labels"])
        assert entry["cost_usd"] == 0.0


def test_good_canaries_score_above_their_copies() -> None:
    by = {(r["case_id"], r["variant"]): r for r in _pixel_results()}
    for case in canary_cases():
        assert by[(case.id, "good")]["overall"] > by[(case.id, "copied")]["overall"]


def test_canaries_are_the_same_sheets_every_time() -> None:
    again = run_canaries(PixelJudge(), "prompt-only")
    assert [r["image_sha256"] for r in again] == [r["image_sha256"] for r in _pixel_results()]
    assert [r["scores"] for r in again] == [r["scores"] for r in _pixel_results()]


class _Failing:
    """A judge whose calls fail, and one whose answers break the rubric."""

    def __init__(self, invalid: bool) -> None:
        self.invalid = invalid
        self.seen: list[SheetToJudge] = []

    @property
    def name(self) -> str:
        return "failing"

    @property
    def scored_dims(self) -> frozenset[str]:
        return frozenset(ALL_DIMS)

    def config(self) -> Mapping[str, Any]:
        return {}

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        self.seen.append(sheet)
        if self.invalid:
            return Judgment("failing", "m", RUBRIC_VERSION, None, {"C0": 11})
        raise JudgeError("endpoint down")


def test_a_judge_that_fails_is_reported_per_canary() -> None:
    judge = _Failing(invalid=False)
    results = run_canaries(judge, "prompt-only")
    assert len(results) == len(CANARY_DOMAINS) * len(CANARY_VARIANTS)
    assert {r["error"] for r in results} == {"JudgeError: endpoint down"}
    assert all("overall" not in r for r in results)
    assert {s.path for s in judge.seen} == {NOT_STORED}  # judged from memory, not the store


def test_an_invalid_judgment_is_reported_not_scored() -> None:
    results = run_canaries(_Failing(invalid=True), "prompt-only")
    assert all(r["error"].startswith("JudgeError: ") for r in results)
    assert all("C0=11 is outside" in r["error"] for r in results)
