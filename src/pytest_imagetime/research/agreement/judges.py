"""``imagetime judges-agree``: how often two judges agree on the same stored sheets.

Both judges' judgments are read from one model directory (``<out>/<model>/<judge>/
judgments``) and paired by case only when they judged the same image bytes. Per domain and
overall: predicate and forbidden-state verdict agreement (accuracy in percent and Cohen's
kappa, "unclear" a verdict of its own) and, per dimension, the mean absolute difference and
Spearman's rho of the scores both judges gave. Undefined statistics are null.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cases.model import Case
from ...rubric.judgment import Judgment
from ...store.atomic import read_json
from ...store.paths import dir_slug
from ..cases import command_cases
from .stats import accuracy, cohen_kappa, finite, mae, spearman

DIMS = ("C0", "D8", "D9", "D13")
PREDICATE = {True: "holds", False: "fails", None: "unclear"}
FORBIDDEN = {True: "observed", False: "absent", None: "unclear"}


@dataclass(frozen=True)
class Pair:
    case_id: str
    domain: str
    a: Judgment
    b: Judgment


def stored_judgments(run_dir: Path) -> dict[str, tuple[str, Judgment]]:
    """case id -> (image sha256, judgment); first repeats only (``<case>@r2`` are skipped)."""
    out: dict[str, tuple[str, Judgment]] = {}
    for path in sorted((run_dir / "judgments").glob("*.json")):
        record = read_json(path)
        if "@r" in path.stem or not isinstance(record, dict):
            continue
        try:
            out[str(record["case_id"])] = (str(record["image_sha256"]),
                                           Judgment.from_json(record["judgment"]))
        except (KeyError, TypeError):
            continue
    return out


def pair_judgments(model_dir: Path, judge_a: str, judge_b: str,
                   cases: Mapping[str, Case]) -> tuple[list[Pair], list[str]]:
    """Pairs judged on the same image by both judges, and the case ids that are not."""
    a = stored_judgments(model_dir / dir_slug(judge_a))
    b = stored_judgments(model_dir / dir_slug(judge_b))
    pairs, unpaired = [], []
    for case_id in sorted(set(a) | set(b)):
        if case_id in a and case_id in b and a[case_id][0] == b[case_id][0]:
            case = cases.get(case_id)
            pairs.append(Pair(case_id, case.domain if case else "unknown", a[case_id][1],
                              b[case_id][1]))
        else:
            unpaired.append(case_id)
    return pairs, unpaired


def _plain(value: float) -> float | None:
    shown = finite(value)
    return None if shown is None else round(shown, 4)


def _verdicts(pairs: Sequence[Pair], field: str,
              names: Mapping[bool | None, str]) -> dict[str, Any]:
    left: list[str] = []
    right: list[str] = []
    for p in pairs:
        if not (p.a.evaluates_predicates and p.b.evaluates_predicates):
            continue
        mine = {v.id: v.value for v in getattr(p.a, field)}
        theirs = {v.id: v.value for v in getattr(p.b, field)}
        for key in sorted(set(mine) & set(theirs)):
            left.append(names[mine[key]])
            right.append(names[theirs[key]])
    return {"n": len(left), "accuracy": _plain(accuracy(left, right)),
            "kappa": _plain(cohen_kappa(left, right))}


def _dim(pairs: Sequence[Pair], dim: str) -> dict[str, Any]:
    both = [(p.a.scores.get(dim), p.b.scores.get(dim)) for p in pairs]
    x = [float(a) for a, b in both if a is not None and b is not None]
    y = [float(b) for a, b in both if a is not None and b is not None]
    return {"n": len(x), "mae": _plain(mae(x, y)), "spearman": _plain(spearman(x, y))}


def agreement(pairs: Sequence[Pair], dims: Sequence[str] = DIMS) -> dict[str, Any]:
    return {"sheets": len(pairs),
            "predicates": _verdicts(pairs, "predicates", PREDICATE),
            "forbidden": _verdicts(pairs, "forbidden", FORBIDDEN),
            "dims": {d: _dim(pairs, d) for d in dims}}


def judges_agree(model_dir: Path, judge_a: str, judge_b: str, cases: Mapping[str, Case],
                 dims: Sequence[str] = DIMS) -> dict[str, Any]:
    pairs, unpaired = pair_judgments(model_dir, judge_a, judge_b, cases)
    domains: dict[str, list[Pair]] = defaultdict(list)
    for p in pairs:
        domains[p.domain].append(p)
    return {"run": str(model_dir), "a": judge_a, "b": judge_b, "unpaired": unpaired,
            "overall": agreement(pairs, dims),
            "by_domain": {d: agreement(v, dims) for d, v in sorted(domains.items())}}


def _cell(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def agreement_lines(result: Mapping[str, Any]) -> list[str]:
    dims = list(result["overall"]["dims"])
    rows = [*result["by_domain"].items(), ("all", result["overall"])]
    width = max(len("domain"), *(len(name) for name, _ in rows))
    head = (f"{'domain':<{width}} {'sheets':>6} {'pred n':>6} {'acc%':>6} {'kappa':>6} "
            f"{'forb n':>6} {'acc%':>6} {'kappa':>6}")
    head += "".join(f" {d + ' MAE':>8} {d + ' rho':>8}" for d in dims)
    lines = [f"judges agree: {result['a']} vs {result['b']} on {result['run']}: "
             f"{result['overall']['sheets']} sheets judged by both, "
             f"{len(result['unpaired'])} not", head]
    for name, m in rows:
        p, f = m["predicates"], m["forbidden"]
        line = (f"{name:<{width}} {m['sheets']:>6} {p['n']:>6} {_cell(p['accuracy'], '.1f'):>6} "
                f"{_cell(p['kappa'], '.2f'):>6} {f['n']:>6} {_cell(f['accuracy'], '.1f'):>6} "
                f"{_cell(f['kappa'], '.2f'):>6}")
        line += "".join(f" {_cell(m['dims'][d]['mae'], '.2f'):>8} "
                        f"{_cell(m['dims'][d]['spearman'], '.2f'):>8}" for d in dims)
        lines.append(line)
    return lines


# ---------------------------------------------------------------- the command


def run(args: argparse.Namespace) -> int:
    cases = command_cases("judges-agree", args.cases)
    if cases is None:
        return 2
    model_dir = Path(args.run)
    if (model_dir / "judgments").is_dir():  # a judge's run directory: its parent holds both
        model_dir = model_dir.parent
    result = judges_agree(model_dir, args.a, args.b, cases)
    if not result["overall"]["sheets"]:
        print(f"imagetime judges-agree: no sheet of {model_dir} was judged by both {args.a} "
              f"and {args.b} (looked in {model_dir}/<judge>/judgments)", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for line in agreement_lines(result):
            print(line)
    return 0
