"""``imagetime agree``: agreement between two label tables, per group and overall."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import stats
from .tables import (
    SHOWN_KEYS,
    Joined,
    LabelType,
    Pair,
    TableError,
    Typing,
    as_category,
    as_number,
    describe_key,
    detect_type,
    join,
    read_table,
)

OVERALL = "overall"
PERCENT_KEYS = frozenset({"accuracy", "macro_precision", "macro_recall", "macro_f1"})
# The statistics each comparison reports, in the order the table prints them.
COLUMNS: dict[str, tuple[str, ...]] = {
    "categorical": ("kappa", "accuracy", "macro_precision", "macro_recall", "macro_f1"),
    "ordinal": ("weighted_kappa", "spearman", "kendall", "mae"),
    "continuous": ("spearman", "kendall", "mae"),
    "point-biserial": ("point_biserial",),
}


def statistics(pairs: Sequence[Pair], typing: Typing) -> dict[str, float]:
    """The statistics that fit the label type; A is the reference for precision and recall."""
    if typing.type == "categorical":
        a = [as_category(p.a) for p in pairs]
        b = [as_category(p.b) for p in pairs]
        precision, recall, f1 = stats.macro_prf(a, b)
        return {"kappa": stats.cohen_kappa(a, b), "accuracy": stats.accuracy(a, b),
                "macro_precision": precision, "macro_recall": recall, "macro_f1": f1}
    x = [_number(p.a) for p in pairs]
    y = [_number(p.b) for p in pairs]
    if typing.binary_side is not None:
        values, binary = (y, x) if typing.binary_side == "a" else (x, y)
        return {"point_biserial": stats.point_biserial(values, [v != 0 for v in binary])}
    out = {"spearman": stats.spearman(x, y), "kendall": stats.kendall_tau(x, y),
           "mae": stats.mae(x, y)}
    if typing.type == "ordinal":
        ints_a, ints_b = [int(v) for v in x], [int(v) for v in y]
        lo = min([0, *ints_a, *ints_b])  # a forced --type ordinal may leave the 0-10 scale
        hi = max([10, *ints_a, *ints_b])
        out = {"weighted_kappa": stats.weighted_kappa(ints_a, ints_b, lo=lo, hi=hi), **out}
    return out


def _number(value: str) -> float:
    number = as_number(value)
    if number is None:  # detect_type has already checked every label
        raise TableError(f"label {value!r} is not a number")
    return number


def group_entry(pairs: Sequence[Pair], missing: int, typing: Typing) -> dict[str, Any]:
    values = statistics(pairs, typing)
    return {"n": len(pairs), "missing": missing, **{k: stats.finite(v) for k, v in values.items()}}


def agreement(joined: Joined, typing: Typing, keys: Sequence[str],
              by: str | None) -> dict[str, Any]:
    """The JSON document: overall, one entry per group, and the rows left out."""
    groups: dict[str, list[Pair]] = {}
    for pair in joined.pairs:
        groups.setdefault(pair.group, []).append(pair)
    for group in joined.missing:
        groups.setdefault(group, [])
    result: dict[str, Any] = {
        "type": typing.type,
        "overall": group_entry(joined.pairs, sum(joined.missing.values()), typing),
    }
    if typing.binary_side is not None:
        result["binary"] = typing.binary_side
    if by is not None:
        result["by"] = by
        result["groups"] = {g: group_entry(groups[g], joined.missing.get(g, 0), typing)
                            for g in sorted(groups)}
    for side, unmatched in (("a", joined.unmatched_a), ("b", joined.unmatched_b)):
        result[f"unmatched_{side}"] = {
            "count": len(unmatched),
            "first": [dict(zip(keys, k, strict=True)) for k in unmatched[:SHOWN_KEYS]]}
    return result


# ---------------------------------------------------------------- text output


def _shown(key: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.1f}" if key in PERCENT_KEYS else f"{value:.3f}"


def text_lines(result: dict[str, Any], args: argparse.Namespace) -> list[str]:
    typing = result["type"]
    label_b = args.label_b or args.label
    on = ", ".join(k.strip() for k in args.on.split(","))
    lines = [f"A: {args.a} ({args.label})   B: {args.b} ({label_b})   on {on}"]
    if "binary" in result:
        binary, other = ("A", "B") if result["binary"] == "a" else ("B", "A")
        lines.append(f"labels: continuous ({other}) vs binary ({binary}): point-biserial r")
        columns = COLUMNS["point-biserial"]
    else:
        lines.append(f"labels: {typing}")
        columns = COLUMNS[typing]
    overall = result["overall"]
    lines.append(f"pairs: {overall['n']} matched, {overall['missing']} with a missing label "
                 "left out")
    rows = [(g, e) for g, e in result.get("groups", {}).items()] + [(OVERALL, overall)]
    names = [g or "(empty)" for g, _ in rows]
    width = max(len(n) for n in [*names, result.get("by", "")])
    header = [result.get("by", "").ljust(width), "n".rjust(5), "missing".rjust(7)]
    header += [c.rjust(max(len(c), 7)) for c in columns]
    lines += ["", "  ".join(header)]
    for name, (_, entry) in zip(names, rows, strict=True):
        cells = [name.ljust(width), str(entry["n"]).rjust(5), str(entry["missing"]).rjust(7)]
        cells += [_shown(c, entry[c]).rjust(max(len(c), 7)) for c in columns]
        lines.append("  ".join(cells))
    lines.append("")
    if typing == "categorical":
        lines.append("accuracy, precision, recall and F1 in %, A as the reference")
    else:
        lines.append("coefficients in -1..1" + ("" if "binary" in result
                                                 else "; mae in label units"))
    return lines


def unmatched_lines(result: dict[str, Any], args: argparse.Namespace) -> list[str]:
    out = []
    for side, path in (("a", args.a), ("b", args.b)):
        info = result[f"unmatched_{side}"]
        if info["count"]:
            keys = "; ".join(describe_key(list(k), tuple(k.values())) for k in info["first"])
            more = ", ..." if info["count"] > len(info["first"]) else ""
            rows = "row" if info["count"] == 1 else "rows"
            out.append(f"imagetime agree: {info['count']} {rows} of {path} without a match in "
                       f"the other table: {keys}{more}")
    return out


# ---------------------------------------------------------------- the command


def run(args: argparse.Namespace) -> int:
    keys = [k.strip() for k in args.on.split(",") if k.strip()]
    if not keys:
        print("imagetime agree: --on needs at least one key column", file=sys.stderr)
        return 2
    label_b = args.label_b or args.label
    try:
        a, b = read_table(Path(args.a)), read_table(Path(args.b))
        joined = join(a, b, keys, args.label, label_b, by=args.by)
        if not joined.pairs and not joined.missing:
            raise TableError(f"no row of {a.path} matches a row of {b.path} on "
                             f"{', '.join(keys)}")
        forced: LabelType | None = args.type
        typing = detect_type([p.a for p in joined.pairs], [p.b for p in joined.pairs], forced)
        result = agreement(joined, typing, keys, args.by)
    except (TableError, ValueError) as exc:
        print(f"imagetime agree: {exc}", file=sys.stderr)
        return 2
    for line in unmatched_lines(result, args):
        print(line, file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=1, allow_nan=False))
    else:
        print("\n".join(text_lines(result, args)))
    return 0
