"""The terminal summary table: one row per run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..rubric.facts import LEVEL_KEYS
from ..store.paths import with_setting
from .coverage import coverage_note, coverage_text


def _num(value: float | None, width: int = 5) -> str:
    return f"{'-':>{width}}" if value is None else f"{value:>{width}.2f}"


def summary_lines(reports: Sequence[Mapping[str, Any]]) -> list[str]:
    """Rows of N, the cases covered of the suite's, C mean, D mean, Overall, the share of
    sheets passing the layout gate, the tree's protocol node, L0-L6, errors and the judge;
    then a line for each partial run."""
    if not reports:
        return []
    names = [_run_name(r) for r in reports]
    width = max(12, *(len(n) for n in names))
    covered = [coverage_text(r) for r in reports]
    cases_width = max(len("cases"), *(len(c) for c in covered))
    levels = " ".join(f"{k:>5}" for k in LEVEL_KEYS)
    header = (f"{'model':<{width}} {'N':>4} {'cases':<{cases_width}} {'pass':>4} {'fail':>4} "
              f"{'err':>4} {'C mean':>6} {'D mean':>6} {'Overall':>7} {'layout-ok%':>10} "
              f"{'proto':>5} {levels}  judge")
    lines = [header, "-" * len(header)]
    cost_lines = []
    notes = [note for name, report in zip(names, reports, strict=True)
             if (note := coverage_note(name, report)) is not None]
    for name, report, cases in zip(names, reports, covered, strict=True):
        agg = report["aggregate"]
        gate = agg["gate_pass_rate"]
        gate_text = f"{'-':>10}" if gate is None else f"{100 * gate:>10.1f}"
        tree = " ".join(_num(agg["tree"][k]) for k in ("gate", *LEVEL_KEYS))
        judge = report["manifest"]["judge"]
        judge_text = f"{judge['name']} ({judge['config'].get('judge_model', '?')})"
        lines.append(f"{name:<{width}} {agg['n']:>4} {cases:<{cases_width}} {agg['passed']:>4} "
                     f"{agg['failed']:>4} "
                     f"{agg['errors']:>4} {_num(agg['c_mean'], 6)} {_num(agg['d_mean'], 6)} "
                     f"{_num(agg['overall'], 7)} {gate_text} {tree}  {judge_text}")
        line = _cost_line(name, report)
        if line:
            cost_lines.append(line)
    return lines + notes + cost_lines


def _cost_line(name: str, report: Mapping[str, Any]) -> str | None:
    """The run's judge cost, what this session spent and the prompt-cache hit rate; None for
    a run that cost nothing (offline judges). An unknown cost says so, never $0."""
    agg = report["aggregate"]
    cost, spent = agg["cost_usd"], report.get("spent_usd", 0.0)
    if cost == 0 and spent == 0:
        return None
    model = report["manifest"]["judge"]["config"].get("judge_model", "?")
    if cost is None:
        text = f"{name}: judge cost unknown (no price for {model}; give --imagetime-judge-price)"
    else:
        per_case = cost / agg["judged"] if agg["judged"] else 0.0
        text = f"{name}: judge cost ${cost:.4f} (${per_case:.4f} per case)"
    text += ", spent this session " + ("unknown" if spent is None else f"${spent:.4f}")
    cache = report.get("prompt_cache")
    if cache and cache.get("hit_rate") is not None:
        text += (f", prompt cache {100 * cache['hit_rate']:.1f}% of "
                 f"{cache['tokens_in']} input tokens")
    return text


def _run_name(report: Mapping[str, Any]) -> str:
    manifest = report["manifest"]
    setting = manifest["setting"]
    return with_setting(str(manifest["model"]["spec"]), setting)
