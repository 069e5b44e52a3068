"""The order probe's report: metrics per run, per domain and overall (the Reasoning and
Inferring scores among them when asked), verdicts, a table.

Two readings of the same numbers. On the procedural model's good sheets the right order is
certain, so a judge that cannot recover it is unfit to score temporal dimensions. On any
other model's sheets a low group score says the sheets carry weak temporal evidence: an
objective signal beside the judge's C5 and D9. Thresholds and definitions:
docs/order-probe.md. The JSON report's schema is ``schemas/order_probe.schema.json``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ... import __version__
from ...schema_files import validate_against
from ...store.atomic import read_json
from .order import PROBE_VERSION, Outcome, ProbedRun, ProbeSettings
from .order_metrics import OrderAnswer, PairAnswer, mean_rating, order_metrics, pair_metrics

REPORT_FORMAT = "imagetime-order-probe/2"
REFERENCE_MODEL = "procedural"  # its good sheets: the order is certain
FIT_MIN_GROUP = 90.0  # percent; a fit judge orders nearly every reference pair both ways
FIT_MIN_EXACT_ORDER = 80.0  # percent of reference grids put in exactly the right order
WEAK_BELOW_GROUP = 70.0  # percent; chance is 25, an always-top judge scores 0
ERRORS_LISTED = 10
METRIC_KEYS = ("acc", "acc_r", "group", "f1", "position_bias", "exact_order", "kendall_tau",
               "reasoning", "inferring")
TEXT_KINDS = ("reasoning", "inferring")
TEXT_HEADS = {"reasoning": "R", "inferring": "I"}  # TimeCausality's R-score and I-score, 0-5


def _plain(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def metrics(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    answered = [o for o in outcomes if o.error is None]
    pairs = [PairAnswer(f"{o.run}|{o.case_id}|{o.probe.group}", o.probe.reversed, o.answer)
             for o in answered if o.probe.kind == "pair"]
    orders = [OrderAnswer(o.ranks) for o in answered if o.ranks is not None]
    ratings = {kind: [o.rating for o in answered
                      if o.probe.kind == kind and o.rating is not None]
               for kind in TEXT_KINDS}
    values = {**pair_metrics(pairs), **order_metrics(orders),
              **{kind: mean_rating(r) for kind, r in ratings.items()}}
    return {"probes": len(outcomes), "answered": len(answered),
            "errors": len(outcomes) - len(answered), "pairs": len(pairs), "orders": len(orders),
            **{f"{kind}_rated": len(r) for kind, r in ratings.items()},
            **{k: _plain(values[k]) for k in METRIC_KEYS}}


def run_scores(model_dir: Path) -> dict[str, dict[str, float | None]]:
    """C5 and D9 means of every judge's report.json stored beside the run's images."""
    out: dict[str, dict[str, float | None]] = {}
    for path in sorted(model_dir.glob("*/report.json")):
        report = read_json(path)
        try:
            dims = report["aggregate"]["dims"]  # type: ignore[index]
            out[path.parent.name] = {d: dims[d]["mean"] for d in ("C5", "D9")}
        except (KeyError, TypeError):
            continue
    return out


def is_reference(model: str) -> bool:
    return model.split("@")[0] == REFERENCE_MODEL


def verdict(model: str, values: Mapping[str, Any]) -> dict[str, str]:
    group, exact = values["group"], values["exact_order"]
    if is_reference(model):
        if group is None or exact is None:
            return {"role": "reference", "status": "unknown",
                    "reason": "no pair or grid of the reference sheets was answered"}
        if group < FIT_MIN_GROUP or exact < FIT_MIN_EXACT_ORDER:
            return {"role": "reference", "status": "unfit",
                    "reason": f"on the reference sheets group score {group:.1f} (needs "
                              f"{FIT_MIN_GROUP:g}) and exact order {exact:.1f} (needs "
                              f"{FIT_MIN_EXACT_ORDER:g})"}
        return {"role": "reference", "status": "fit",
                "reason": f"group score {group:.1f} >= {FIT_MIN_GROUP:g}, exact order "
                          f"{exact:.1f} >= {FIT_MIN_EXACT_ORDER:g}"}
    if group is None:
        return {"role": "model", "status": "unknown", "reason": "no pair was answered"}
    if group < WEAK_BELOW_GROUP:
        return {"role": "model", "status": "weak",
                "reason": f"weak temporal evidence: group score {group:.1f} < "
                          f"{WEAK_BELOW_GROUP:g}"}
    return {"role": "model", "status": "ok",
            "reason": f"group score {group:.1f} >= {WEAK_BELOW_GROUP:g}"}


def judge_fitness(runs: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    checks = [r for r in runs if r["verdict"]["role"] == "reference"]
    if not checks:
        return {"status": "not checked",
                "reasons": [f"no run of the {REFERENCE_MODEL!r} model was probed"]}
    statuses = {r["verdict"]["status"] for r in checks}
    status = "unfit" if "unfit" in statuses else "fit" if "fit" in statuses else "unknown"
    return {"status": status, "reasons": [f"{r['model']}: {r['verdict']['reason']}"
                                          for r in checks]}


def _endpoint(who: Mapping[str, Any]) -> dict[str, Any]:
    return {"model": who.get("model"), "base_url": who.get("base_url"),
            "price_usd_per_mtok": who.get("price_usd_per_mtok")}


def build_report(runs: Sequence[ProbedRun], outcomes: Sequence[Outcome],
                 settings: ProbeSettings, judge: Mapping[str, Any], created: str,
                 sample: int | None = None,
                 rater: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``rater``: the free-text answers' rater, when the aspects ask for one."""
    by_run: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_run[o.run].append(o)
    entries = []
    for run in runs:
        mine = by_run.get(str(run.path), [])
        domains: dict[str, list[Outcome]] = defaultdict(list)
        for o in mine:
            domains[o.domain].append(o)
        values = metrics(mine)
        entries.append({
            "path": str(run.path), "model": run.model, "sheets": len(run.sheets),
            "metrics": values,
            "by_domain": {d: metrics(v) for d, v in sorted(domains.items())},
            "verdict": verdict(run.model, values),
            "scores": run_scores(run.path),
            "errors": [{"case_id": o.case_id, "probe": o.probe.name, "reason": o.error or ""}
                       for o in mine if o.error is not None],
        })
    asked = {who: sum(o.asked.count(who) for o in outcomes) for who in ("judge", "rater")}
    cached = {who: sum(o.cached.count(who) for o in outcomes) for who in ("judge", "rater")}
    return {
        "format": REPORT_FORMAT, "probe_version": PROBE_VERSION, "created": created,
        "plugin_version": __version__,
        "judge": _endpoint(judge),
        "rater": _endpoint(rater) if rater is not None else None,
        "settings": {"seed": settings.seed, "sample": sample,
                     "cover_corner": settings.cover_corner,
                     "concurrency": settings.concurrency, "params": dict(settings.params),
                     "aspects": list(settings.aspects)},
        "thresholds": {"fit_min_group": FIT_MIN_GROUP,
                       "fit_min_exact_order": FIT_MIN_EXACT_ORDER,
                       "weak_below_group": WEAK_BELOW_GROUP},
        "judge_fitness": judge_fitness(entries),
        "overall": metrics(outcomes),
        "runs": entries,
        "asked": sum(asked.values()), "cached": sum(cached.values()),
        "asked_by": asked, "cached_by": cached,
        "cost_usd": math.fsum(o.cost_usd for o in outcomes),
    }


def validate_report(report: Mapping[str, Any]) -> None:
    """Raise jsonschema.ValidationError when the report does not match its schema."""
    validate_against("order_probe", report)


# ---------------------------------------------------------------- the table


def _num(value: float | None, width: int, spec: str = ".1f") -> str:
    return f"{'n/a' if value is None else format(value, spec):>{width}}"


def _row(label: str, width: int, sheets: int | str, m: Mapping[str, Any], note: str,
         texts: Sequence[str] = ()) -> str:
    rated = "".join(f" {_num(m[kind], 6, '.2f')}" for kind in texts)
    return (f"{label:<{width}} {sheets!s:>6} {m['errors']:>6} {_num(m['acc'], 6)} "
            f"{_num(m['acc_r'], 6)} {_num(m['group'], 6)} {_num(m['f1'], 6)} "
            f"{_num(m['position_bias'], 6, '+.2f')} {_num(m['exact_order'], 6)} "
            f"{_num(m['kendall_tau'], 6, '+.2f')}{rated}  {note}".rstrip())


def _scores_note(scores: Mapping[str, Mapping[str, float | None]]) -> str:
    parts = []
    for judge, dims in scores.items():
        shown = " ".join(f"{d} {v:.2f}" for d, v in dims.items() if v is not None)
        if shown:
            parts.append(f"{judge}: {shown}")
    return "; ".join(parts)


def report_lines(report: Mapping[str, Any]) -> list[str]:
    judge = report["judge"]
    where = f" at {judge['base_url']}" if judge.get("base_url") else ""
    runs = report["runs"]
    labels = [r["model"] for r in runs] + [f"  {d}" for r in runs for d in r["by_domain"]]
    width = max([len("run"), len("all runs"), *map(len, labels)])
    texts = [kind for kind in TEXT_KINDS if kind in report["settings"]["aspects"]]
    rater = report.get("rater")
    asks = "5 probes a sheet (t1/t4 and t2/t3 both ways, 4 shuffled)" \
        if "order" in report["settings"]["aspects"] else "no order probes"
    if texts:
        asks += (f"; {' and '.join(texts)} on t1/t4 and t2/t3 (later on top), rated 0-5 by "
                 f"{rater['model'] if rater else judge['model']}")
    lines = [f"order probe: judge {judge['model']}{where}; {asks}",
             f"{'run':<{width}} {'sheets':>6} {'errors':>6} {'ACC':>6} {'ACC-R':>6} "
             f"{'group':>6} {'F1':>6} {'bias':>6} {'exact':>6} {'tau':>6}"
             + "".join(f" {TEXT_HEADS[kind]:>6}" for kind in texts) + "  verdict"]
    for r in runs:
        status = r["verdict"]["status"]
        note = {"fit": "judge fit", "unfit": "JUDGE UNFIT", "weak": "WEAK TEMPORAL EVIDENCE",
                "ok": "ok", "unknown": "unknown"}[status]
        scores = _scores_note(r["scores"])
        lines.append(_row(r["model"], width, r["sheets"], r["metrics"],
                          f"{note} ({scores})" if scores else note, texts))
        if len(r["by_domain"]) > 1 or any(d != "unknown" for d in r["by_domain"]):
            for domain, m in r["by_domain"].items():
                lines.append(_row(f"  {domain}", width, "", m, "", texts))
    if len(runs) > 1:
        lines.append(_row("all runs", width, sum(r["sheets"] for r in runs), report["overall"],
                          "", texts))
    fitness = report["judge_fitness"]
    lines.append(f"judge: {fitness['status']} ({'; '.join(fitness['reasons'])})")
    errors = [(r["model"], e) for r in runs for e in r["errors"]]
    if errors:
        lines.append(f"errors ({len(errors)}, not scored):")
        for model, e in errors[:ERRORS_LISTED]:
            lines.append(f"  {model} {e['case_id']} {e['probe']}: {e['reason']}")
        if len(errors) > ERRORS_LISTED:
            lines.append(f"  ... and {len(errors) - ERRORS_LISTED} more in the JSON report")
    unpriced = [who["model"] for who, role in ((judge, "judge"), (rater or judge, "rater"))
                if who.get("price_usd_per_mtok") is None and report["asked_by"][role]]
    cost = f"${report['cost_usd']:.4f}" if not unpriced else \
        f"unknown (no price for {', '.join(dict.fromkeys(unpriced))})"
    lines.append(f"asked {report['asked']}, cached {report['cached']}, cost {cost}")
    return lines
