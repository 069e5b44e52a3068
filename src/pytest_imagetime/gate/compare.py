"""The regression gate: a run compared with a stored baseline report.

Tolerances (``--imagetime-max-drop=L5:0.3,overall:0.2``) bound how far a metric may fall
below the baseline; floors (``--imagetime-min=L3:6.0``) bound it absolutely. Judges are noisy,
so every drop also gets a paired bootstrap confidence interval over the cases both runs
scored; ``--imagetime-gate-significant`` breaches a tolerance only when the whole interval
lies below it. Runs by different judges or rubrics are not compared unless the user says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..rubric.facts import ALL_DIMS, LEVEL_KEYS
from ..scoring.intervals import paired_bootstrap

METRICS: tuple[str, ...] = ("overall", "c_mean", "d_mean", "gate", *LEVEL_KEYS, *ALL_DIMS)


class GateSpecError(ValueError):
    pass


# The tree's "Gate: Protocol" node is shown as "protocol", so that the compare table's row is
# not read as this comparison's own verdict ("gate BREACHED"); "gate" is still accepted.
NAME_OF_METRIC: dict[str, str] = {"gate": "protocol"}
METRIC_OF_NAME: dict[str, str] = {"protocol": "gate"}


def parse_thresholds(text: str, option: str) -> dict[str, float]:
    """'L5:0.3,overall:0.2' -> {'L5': 0.3, 'overall': 0.2}; names the bad part."""
    limits: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, value = part.partition(":")
        name = name.strip()
        if name.upper() in (*LEVEL_KEYS, *ALL_DIMS):
            name = name.upper()
        name = METRIC_OF_NAME.get(name, name)
        if not sep or name not in METRICS:
            raise GateSpecError(f"{option}={text}: {part!r} is not METRIC:NUMBER; metrics: "
                                f"overall, c_mean, d_mean, protocol (the tree's protocol node; "
                                f"also 'gate'), L0-L6, C0-C9, D0-D14")
        try:
            limits[name] = float(value)
        except ValueError:
            raise GateSpecError(f"{option}={text}: {value!r} in {part!r} is not a number") \
                from None
        if not 0 <= limits[name] <= 10:
            raise GateSpecError(f"{option}={text}: {part!r} must lie within 0-10")
    return limits


def metric_of(report: Mapping[str, Any], metric: str) -> float | None:
    agg = report["aggregate"]
    if metric in ("overall", "c_mean", "d_mean"):
        value = agg[metric]
    elif metric == "gate" or metric in LEVEL_KEYS:
        value = agg["tree"][metric]
    else:
        value = agg["dims"][metric]["mean"]
    return None if value is None else float(value)






@dataclass(frozen=True)
class Row:
    metric: str
    baseline: float | None
    current: float | None
    ci: tuple[float, float, int] | None
    breach: str | None  # why this metric fails the gate, or None

    @property
    def measured(self) -> bool:
        """Whether either run has a value: a metric the judge does not score (L3 under the
        pixel judge) has none in both, and its tolerance or floor is not applied."""
        return self.baseline is not None or self.current is not None

    @property
    def verdict(self) -> str:
        return self.breach or ("ok" if self.measured else "not measured")

    @property
    def delta(self) -> float | None:
        if self.baseline is None or self.current is None:
            return None
        return self.current - self.baseline


@dataclass(frozen=True)
class GateResult:
    run: str
    rows: tuple[Row, ...]
    flipped: tuple[str, ...] = ()  # passed in the baseline, fail now
    newly_passing: tuple[str, ...] = ()
    incompatible: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)
    limited: frozenset[str] = frozenset()  # metrics with a tolerance or a floor

    @property
    def breached(self) -> bool:
        return bool(self.incompatible) or any(r.breach for r in self.rows)


def incompatibilities(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """What differs in a way that makes the scores incomparable."""
    problems = []
    b, c = baseline["manifest"], current["manifest"]
    if b["judge"]["config"].get("judge_model") != c["judge"]["config"].get("judge_model"):
        problems.append(f"judge model {b['judge']['config'].get('judge_model')!r} in the "
                        f"baseline, {c['judge']['config'].get('judge_model')!r} now")
    if b["judge"]["name"] != c["judge"]["name"] and "replay" not in (b["judge"]["name"],
                                                                      c["judge"]["name"]):
        problems.append(f"judge {b['judge']['name']!r} in the baseline, {c['judge']['name']!r} now")
    if baseline["rubric_version"] != current["rubric_version"]:
        problems.append(f"rubric {baseline['rubric_version']} in the baseline, "
                        f"{current['rubric_version']} now")
    b_prompt = b["judge"]["config"].get("prompt_version")
    c_prompt = c["judge"]["config"].get("prompt_version")
    if b_prompt != c_prompt:
        problems.append(f"judge prompt {b_prompt} in the baseline, {c_prompt} now")
    if b["setting"] != c["setting"]:
        problems.append(f"setting {b['setting']} in the baseline, {c['setting']} now")
    return problems


def compare(baseline: Mapping[str, Any], current: Mapping[str, Any],
            max_drop: Mapping[str, float], floors: Mapping[str, float],
            significant: bool = False, allow_judge_change: bool = False,
            run: str = "") -> GateResult:
    incompatible = [] if allow_judge_change else incompatibilities(baseline, current)
    from ..report.coverage import case_set_difference  # a judge change never excuses this

    different_cases = case_set_difference(baseline, current)
    if different_cases is not None:
        incompatible.append(different_cases)
    metrics = ["overall", "gate", *LEVEL_KEYS]
    metrics += [m for m in (*max_drop, *floors) if m not in metrics]
    judged = any(item["status"] != "error" for item in current["items"])
    rows = []
    for metric in metrics:
        before, now = metric_of(baseline, metric), metric_of(current, metric)
        ci = paired_bootstrap(baseline["items"], current["items"], metric)
        rows.append(Row(metric, before, now, ci,
                        _breach(metric, before, now, ci, max_drop, floors, significant,
                                judged)))
    before_status = {i["case_id"]: i["status"] for i in baseline["items"]}
    flipped = tuple(sorted(i["case_id"] for i in current["items"]
                           if before_status.get(i["case_id"]) == "passed"
                           and i["status"] != "passed"))
    newly = tuple(sorted(i["case_id"] for i in current["items"]
                         if before_status.get(i["case_id"]) in ("failed", "error")
                         and i["status"] == "passed"))
    return GateResult(run, tuple(rows), flipped, newly, tuple(incompatible),
                      limited=frozenset((*max_drop, *floors)))


def _breach(metric: str, before: float | None, now: float | None,
            ci: tuple[float, float, int] | None, max_drop: Mapping[str, float],
            floors: Mapping[str, float], significant: bool, judged: bool = True) -> str | None:
    if now is None and (metric in floors or metric in max_drop):
        if not judged:
            return "no score now: no item was judged"
        if before is None:
            return None  # neither run measured it: the judge does not score it
        return "no score now"
    if metric in floors and now is not None and now < floors[metric]:
        return f"{now:.2f} is below the floor {floors[metric]:g}"
    if metric in max_drop and before is not None and now is not None:
        drop = before - now
        if drop > max_drop[metric]:
            if not significant:
                return f"dropped {drop:.2f} (tolerance {max_drop[metric]:g})"
            if ci is not None and ci[1] < -max_drop[metric]:
                return (f"dropped {drop:.2f}, significantly (95% CI of the paired change "
                        f"{ci[0]:+.2f}..{ci[1]:+.2f}; tolerance {max_drop[metric]:g})")
    return None


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def gate_lines(results: Sequence[GateResult]) -> list[str]:
    lines: list[str] = []
    for result in results:
        verdict = "BREACHED" if result.breached else "passed"
        lines.append(f"gate {verdict}: {result.run}")
        for problem in result.incompatible:
            hint = "" if problem.startswith("different cases") else (
                " (--imagetime-allow-judge-change if intended)")
            lines.append(f"  not comparable: {problem}{hint}")
        lines.append(f"  {'metric':<8} {'baseline':>8} {'now':>8} {'change':>8} "
                     f"{'95% CI (paired)':>17}  verdict")
        for row in result.rows:
            delta = "-" if row.delta is None else f"{row.delta:+.2f}"
            ci = "-" if row.ci is None else f"{row.ci[0]:+.2f}..{row.ci[1]:+.2f}"
            shown = NAME_OF_METRIC.get(row.metric, row.metric)
            lines.append(f"  {shown:<8} {_fmt(row.baseline):>8} {_fmt(row.current):>8} "
                         f"{delta:>8} {ci:>17}  {row.verdict}")
        unmeasured = [NAME_OF_METRIC.get(r.metric, r.metric) for r in result.rows
                      if not r.measured and r.metric in result.limited]
        if unmeasured:
            lines.append(f"  not measured by this judge, so not gated: {', '.join(unmeasured)}")
        if result.flipped:
            lines.append(f"  newly failing ({len(result.flipped)}): "
                         + ", ".join(result.flipped[:20])
                         + (" ..." if len(result.flipped) > 20 else ""))
        if result.newly_passing:
            lines.append(f"  newly passing ({len(result.newly_passing)}): "
                         + ", ".join(result.newly_passing[:20])
                         + (" ..." if len(result.newly_passing) > 20 else ""))
    return lines


def gate_json(result: GateResult) -> dict[str, Any]:
    return {
        "breached": result.breached,
        "incompatible": list(result.incompatible),
        "rows": [{"metric": r.metric, "baseline": r.baseline, "current": r.current,
                  "change": r.delta, "ci95": None if r.ci is None else [r.ci[0], r.ci[1]],
                  "pairs": None if r.ci is None else r.ci[2], "breach": r.breach,
                  "measured": r.measured}
                 for r in result.rows],
        "newly_failing": list(result.flipped),
        "newly_passing": list(result.newly_passing),
    }
