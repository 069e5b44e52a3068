"""The runners of ``imagetime tempviz``: P/R/F1, the random baseline, the point-biserial test
and the VQA sweep over label tables, and the judge, VQA and label-form runs over stored images.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...backends.prices import price_for
from ...judges.base import JudgeOptions
from ...tempviz.examples import ExamplesError
from ...tempviz.exemplars import load_exemplars
from ...tempviz.judge import TextAsker, WholePromptJudge
from ...tempviz.prompts import TempvizDataError
from ..agreement.tables import TableError
from ..labels.columns import write_csv
from ..labels.tempviz_form import export_tempviz
from .answer_store import AnswerStore
from .evaluate import (
    OVERALL,
    THRESHOLDS,
    Prf,
    best_thresholds,
    prf_by_category,
    random_predictions,
    sweep,
)
from .images import find_images
from .judging import COLUMNS, JUDGE_STORE, judge_images, load_prompts
from .labels import (
    COMBINED,
    TARGETS,
    label,
    pair_up,
    read_keyed,
    read_pair,
    require_labels,
    whole_prompt_column,
    yes_no,
)
from .significance import point_biserial_test
from .tally import Tally
from .vqa_runs import (
    ANSWERS_STORE,
    KEY_HINT,
    QUESTIONS_STORE,
    SCORE_COLUMNS,
    Asking,
    answer_images,
    read_questions,
    write_questions,
)

PBS_TARGETS = ("q2", "q3", COMBINED)  # the columns of Table 3


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _cell(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.1f}"


def _prf_lines(title: str, rows: Mapping[str, Prf]) -> list[str]:
    width = max(len(g) for g in [*rows, "category"])
    lines = [title, f"{'category'.ljust(width)}      n      P      R     F1"]
    for group, row in rows.items():
        lines.append(f"{group.ljust(width)}  {row.n:5d}  {_cell(row.precision):>5}  "
                     f"{_cell(row.recall):>5}  {_cell(row.f1):>5}")
    return lines


def _prf_json(rows: Mapping[str, Prf]) -> dict[str, Any]:
    return {g: {k: (_finite(v) if isinstance(v, float) else v) for k, v in r.as_dict().items()}
            for g, r in rows.items()}


def _counts_note(unmatched: int, missing: int) -> list[str]:
    notes = []
    if unmatched:
        notes.append(f"{unmatched} labelled items have no row in the method's table")
    if missing:
        notes.append(f"{missing} items left out: an empty label on either side")
    return notes


def _prf(args: argparse.Namespace) -> dict[str, Any]:

    human, method = read_pair(Path(args.human), Path(args.method))
    require_labels(human.table, [COMBINED] if args.setting == "paper" else TARGETS)
    comparisons: list[tuple[str, str, str, str | None]] = []
    if args.setting == "paper":
        column = args.column or whole_prompt_column(method.table)
        method.table.require(column)
        comparisons.append((f"{COMBINED} vs {column}", COMBINED, column, None))
    else:
        for target in TARGETS:
            comparisons.append((f"{target} vs {target}", target, target, target))
    result: dict[str, Any] = {"setting": args.setting, "comparisons": {}}
    for name, target, column, method_label in comparisons:
        pairs = pair_up(human, method, target, column, method_label)
        odd = sorted({cell for cell in pairs.method if yes_no(cell) is None})
        if odd:
            raise TableError(f"{args.method}: column {column!r} holds {odd[0]!r}, not yes/no")
        predicted = [yes_no(cell) is True for cell in pairs.method]
        rows = prf_by_category(pairs.categories, pairs.human, predicted)
        result["comparisons"][name] = {"rows": rows, "unmatched": pairs.unmatched,
                                       "missing": pairs.missing}
    return result


def _random(args: argparse.Namespace) -> dict[str, Any]:

    human = read_keyed(Path(args.human))
    require_labels(human.table, [args.target])
    known = [(key[-2], v) for key, row in human.rows.items()
             if (v := label(row, args.target)) is not None]
    categories = [c for c, _ in known]
    truth = [v for _, v in known]
    predicted = random_predictions(categories, truth, args.distribution, args.seed)
    return {"rows": prf_by_category(categories, truth, predicted),
            "missing": len(human.rows) - len(known)}


def _pbs(args: argparse.Namespace) -> dict[str, Any]:

    human, method = read_pair(Path(args.human), Path(args.scores))
    require_labels(human.table, PBS_TARGETS)
    if args.column is None:  # CLIPScore's table: the cosine, before the clipping at 0
        args.column = "cosine" if "cosine" in method.table.columns else "score"
    method.table.require(args.column)
    out: dict[str, Any] = {}
    for target in PBS_TARGETS:
        pairs = pair_up(human, method, target, args.column)
        try:
            values = [float(v) for v in pairs.method]
        except ValueError as exc:
            raise TableError(f"{args.scores}: column {args.column!r}: {exc}") from None
        groups: dict[str, tuple[list[float], list[bool]]] = {}
        if args.by_category:
            for c, v, h in zip(pairs.categories, values, pairs.human, strict=True):
                groups.setdefault(c, ([], []))[0].append(v)
                groups[c][1].append(h)
        groups[OVERALL] = (values, list(pairs.human))
        out[target] = {g: point_biserial_test(v, h) for g, (v, h) in sorted(
            groups.items(), key=lambda item: (item[0] == OVERALL, item[0]))}
    return out


def _sweep(args: argparse.Namespace) -> dict[str, Any]:

    human, method = read_pair(Path(args.human), Path(args.method))
    require_labels(human.table, [COMBINED])
    method.table.require(args.column)
    pairs = pair_up(human, method, COMBINED, args.column)
    try:
        fractions = [float(v) for v in pairs.method]
        thresholds = ([float(t) for t in args.thresholds.split(",")] if args.thresholds
                      else list(THRESHOLDS))
    except ValueError as exc:
        raise TableError(f"not a number: {exc}") from None
    table = sweep(pairs.categories, pairs.human, fractions, thresholds)
    drawn = random_predictions(pairs.categories, pairs.human, args.distribution, args.seed)
    return {"table": table, "best": best_thresholds(table), "unmatched": pairs.unmatched,
            "missing": pairs.missing,
            "random": prf_by_category(pairs.categories, pairs.human, drawn)}


def _print_prf(result: Mapping[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps({**result, "comparisons": {
            n: {**c, "rows": _prf_json(c["rows"])} for n, c in result["comparisons"].items()}},
            indent=1))
        return
    for name, comparison in result["comparisons"].items():
        print("\n".join(_prf_lines(f"human {name} (macro P / R / F1 in %)",
                                   comparison["rows"])))
        for note in _counts_note(comparison["unmatched"], comparison["missing"]):
            print(f"imagetime tempviz: {note}", file=sys.stderr)


def _print_random(result: Mapping[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps({"distribution": args.distribution, "seed": args.seed,
                          "target": args.target, "rows": _prf_json(result["rows"]),
                          "missing": result["missing"]}, indent=1))
        return
    print("\n".join(_prf_lines(f"random baseline ({args.distribution}, seed {args.seed}) "
                               f"against human {args.target} (macro P / R / F1 in %)",
                               result["rows"])))


def _print_pbs(result: Mapping[str, Any], args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps({t: {g: {"n": c.n, "r": _finite(c.r), "t": _finite(c.t),
                                  "p": _finite(c.p), "significant": c.significant(args.alpha)}
                              for g, c in groups.items()} for t, groups in result.items()},
                         indent=1))
        return
    print(f"point-biserial r of {args.column} with the human labels "
          f"(* p < {args.alpha}, two-sided t-test)")
    groups = list(next(iter(result.values())))
    width = max(len(g) for g in [*groups, "category"])
    print(f"{'category'.ljust(width)}      n  " + "  ".join(t.rjust(10) for t in result))
    for group in groups:
        cells = []
        for target in result:
            c = result[target][group]
            star = "*" if c.significant(args.alpha) else " "
            cells.append(("n/a" if not math.isfinite(c.r) else f"{c.r:.4f}{star}").rjust(10))
        print(f"{group.ljust(width)}  {result[PBS_TARGETS[-1]][group].n:5d}  "
              + "  ".join(cells))


def _print_sweep(result: Mapping[str, Any], as_json: bool) -> None:
    table: Mapping[float, Mapping[str, Prf]] = result["table"]
    if as_json:
        print(json.dumps({"thresholds": {str(t): _prf_json(rows) for t, rows in table.items()},
                          "best": {g: {"threshold": t, "macro_f1": f}
                                   for g, (t, f) in result["best"].items()},
                          "random": _prf_json(result["random"])}, indent=1))
        return
    groups = list(next(iter(table.values())))
    print("macro F1 (%) against human q2_and_q3, positive when the share of questions "
          "answered correctly >= t")
    print("     t  " + "  ".join(g[:10].rjust(10) for g in groups))
    for t, rows in table.items():
        print(f"{t:6.2f}  " + "  ".join(_cell(rows[g].f1).rjust(10) for g in groups))
    print("random  " + "  ".join(_cell(result["random"][g].f1).rjust(10) for g in groups))


def judge_options(args: argparse.Namespace, model: str) -> JudgeOptions:
    key_env = None if args.key_env.lower() == "none" else args.key_env
    return JudgeOptions(model=model, base_url=args.base_url, key_env=key_env,
                        concurrency=args.concurrency, timeout_s=args.timeout,
                        retries=args.retries, reasks=args.reasks,
                        price_per_mtok=args.price,
                        prices_file=Path(args.prices) if args.prices else None)


def write_rows(path: str, columns: Sequence[str], rows: Sequence[Mapping[str, str]]) -> None:

    write_csv(Path(path), columns, rows)


def _tally(args: argparse.Namespace, options: JudgeOptions) -> Tally:
    """The run's tally; ValueError for --max-cost without a known price."""
    price = price_for(options.model, options.price_per_mtok, options.prices_file)
    return Tally(options.model, price is not None, args.max_cost)


def _store(args: argparse.Namespace, beside: str = "",
           folder: Path | None = None) -> AnswerStore:
    return AnswerStore(Path(args.store) if args.store else folder, beside,
                       enabled=not args.no_store)


def _finish(args: argparse.Namespace, tally: Tally) -> None:
    print(tally.summary())
    for warning in tally.warnings():
        print(f"imagetime tempviz {args.tempviz_command}: {warning}", file=sys.stderr)


def _judge(args: argparse.Namespace) -> None:

    try:
        prompts = load_prompts(Path(args.data))
        exemplars = load_exemplars(Path(args.exemplars), args.style) if args.exemplars else ()
    except (TempvizDataError, ExamplesError) as exc:
        raise ValueError(str(exc)) from None
    shots = args.shots if args.shots is not None else (3 if exemplars else 0)
    if shots and not exemplars:
        raise ValueError(f"--shots {shots} needs --exemplars")
    options = judge_options(args, args.judge_model)
    # Names the judge and keys its answers; the judge that calls is made only when needed.
    judge = WholePromptJudge(dataclasses.replace(options, calls=False), args.style, exemplars,
                             shots)
    tally = _tally(args, options)
    rows = judge_images(judge, find_images(args.runs), prompts, args.concurrency,
                        _store(args, JUDGE_STORE), tally,
                        lambda: WholePromptJudge(options, args.style, exemplars, shots))
    write_rows(args.out, COLUMNS, rows)
    failed = sum(1 for r in rows if r["error"])
    print(f"wrote {args.out}: {len(rows)} images judged by {judge.name}"
          + (f", {failed} without an answer" if failed else ""))
    _finish(args, tally)


def _asking(args: argparse.Namespace, model: str, who: str, store: AnswerStore) -> Asking:
    options = judge_options(args, model)
    return Asking(model, lambda: TextAsker(options, who=who, key_hint=KEY_HINT), store,
                  _tally(args, options), args.concurrency, options.params)


def _vqa_questions(args: argparse.Namespace) -> None:

    try:
        prompts = load_prompts(Path(args.data))
    except TempvizDataError as exc:
        raise ValueError(str(exc)) from None
    wanted = ({i.id for i in find_images(args.runs)} if args.runs else set(prompts))
    chosen = [p for key, p in prompts.items() if key in wanted]
    asking = _asking(args, args.llm_model, "the question generator",
                     _store(args, folder=Path(args.out).parent / QUESTIONS_STORE))
    lines = write_questions(asking, chosen, Path(args.out))
    failed = sum(1 for line in lines if "error" in line)
    asked = sum(len(line.get("questions", [])) for line in lines)
    print(f"wrote {args.out}: {asked} questions for {len(lines) - failed} prompts"
          + (f", {failed} prompts without questions" if failed else ""))
    _finish(args, asking.tally)


def _vqa_answer(args: argparse.Namespace) -> None:

    questions = read_questions(Path(args.questions))
    asking = _asking(args, args.vlm_model, "the VQA answerer", _store(args, ANSWERS_STORE))
    rows, details = answer_images(asking, find_images(args.runs), questions)
    write_rows(args.out, SCORE_COLUMNS, rows)
    if args.details:
        Path(args.details).write_text("".join(json.dumps(d) + "\n" for d in details),
                                      encoding="utf-8")
    failed = sum(1 for r in rows if r["error"])
    print(f"wrote {args.out}: {len(rows)} images" + (f", {failed} without scores"
                                                       if failed else ""))
    _finish(args, asking.tally)


def _label_export(args: argparse.Namespace) -> None:

    if args.sample < 1:
        raise ValueError("--sample must be at least 1")
    try:
        prompts = load_prompts(Path(args.data))
    except TempvizDataError as exc:
        raise ValueError(str(exc)) from None
    for path in export_tempviz(find_images(args.runs), prompts, Path(args.out), args.sample,
                               args.seed, args.annotator or "", args.max_px):
        print(f"wrote {path}")


def _reported(args: argparse.Namespace, step: Callable[[], None]) -> int:
    """Run one subcommand; a bad table or argument is its message and exit status 2."""
    try:
        step()
    except (TableError, ValueError) as exc:
        print(f"imagetime tempviz {args.tempviz_command}: {exc}", file=sys.stderr)
        return 2
    return 0


def prf(args: argparse.Namespace) -> int:
    return _reported(args, lambda: _print_prf(_prf(args), args.json))


def random_baseline(args: argparse.Namespace) -> int:
    return _reported(args, lambda: _print_random(_random(args), args))


def pbs(args: argparse.Namespace) -> int:
    return _reported(args, lambda: _print_pbs(_pbs(args), args))


def threshold_sweep(args: argparse.Namespace) -> int:
    return _reported(args, lambda: _print_sweep(_sweep(args), args.json))


def judge(args: argparse.Namespace) -> int:
    return _reported(args, lambda: _judge(args))


def vqa_questions(args: argparse.Namespace) -> int:
    return _reported(args, lambda: _vqa_questions(args))


def vqa_answer(args: argparse.Namespace) -> int:
    return _reported(args, lambda: _vqa_answer(args))


def label_export(args: argparse.Namespace) -> int:
    return _reported(args, lambda: _label_export(args))
