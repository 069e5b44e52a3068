"""The terminal summary table: one aligned row per run, partial runs and costs noted."""

from __future__ import annotations

from typing import Any

from pytest_imagetime.report.summary import summary_lines
from pytest_imagetime.rubric.facts import LEVEL_KEYS


def _report(spec: str = "procedural", setting: str = "prompt-only", overall: float | None = 7.5,
            cost: float | None = 0.0, spent: float | None = 0.0, judged: int = 4,
            coverage: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    tree: dict[str, float | None] = dict.fromkeys(("gate", *LEVEL_KEYS), 6.0)
    tree["L6"] = None
    report: dict[str, Any] = {
        "manifest": {"setting": setting, "model": {"spec": spec},
                     "judge": {"name": "pixel", "config": {"judge_model": "pixel-metrics/3"}}},
        "aggregate": {"n": 4, "passed": 3, "failed": 1, "errors": 0, "c_mean": 7.0,
                      "d_mean": None, "overall": overall, "gate_pass_rate": 0.75,
                      "tree": tree, "cost_usd": cost, "judged": judged},
        "spent_usd": spent,
        "coverage": coverage if coverage is not None else {
            "cases": 4, "suite": {"name": "imagetime", "cases": 4}, "complete": True,
            "shard": None},
    }
    report.update(extra)
    return report


def test_no_reports_no_table() -> None:
    assert summary_lines([]) == []


def test_one_row_per_run_under_an_aligned_header() -> None:
    lines = summary_lines([_report(), _report("files:ckpt-with-a-long-name", "scaffold",
                                              overall=None)])
    header, rule, first, second = lines
    assert rule == "-" * len(header)
    assert header.split()[:5] == ["model", "N", "cases", "pass", "fail"]
    assert header.endswith("judge")
    assert first.split()[:9] == ["procedural", "4", "4/4", "3", "1", "0", "7.00", "-", "7.50"]
    assert "75.0" in first.split()
    assert first.endswith("pixel (pixel-metrics/3)")
    assert second.startswith("files:ckpt-with-a-long-name@scaffold ")
    assert second.split()[8] == "-"  # no Overall
    assert first.index("pixel (") == second.index("pixel (")  # the columns line up


def test_a_partial_run_gets_a_note_after_the_rows() -> None:
    partial = _report(coverage={"cases": 2, "suite": {"name": "imagetime", "cases": 4},
                                "complete": False, "shard": "1/2", "scope": 2,
                                "missing": 0})
    lines = summary_lines([partial])
    assert "2/4 shard 1/2" in lines[2]
    assert lines[3].startswith("procedural: PARTIAL: 2 of the 4 cases of suite imagetime")
    assert len(lines) == 4


def test_a_run_that_cost_nothing_has_no_cost_line() -> None:
    assert len(summary_lines([_report()])) == 3


def test_the_cost_line_says_per_case_spent_and_the_cache() -> None:
    report = _report(cost=0.5, spent=0.125, judged=4,
                     prompt_cache={"hit_rate": 0.4321, "tokens_in": 12000})
    assert summary_lines([report])[-1] == (
        "procedural: judge cost $0.5000 ($0.1250 per case), spent this session $0.1250, "
        "prompt cache 43.2% of 12000 input tokens")


def test_an_unknown_cost_is_never_zero() -> None:
    line = summary_lines([_report(cost=None, spent=None)])[-1]
    assert line == ("procedural: judge cost unknown (no price for pixel-metrics/3; give "
                    "--imagetime-judge-price), spent this session unknown")


def test_a_run_with_nothing_judged_costs_zero_per_case() -> None:
    line = summary_lines([_report(cost=0.25, judged=0)])[-1]
    assert "judge cost $0.2500 ($0.0000 per case)" in line
