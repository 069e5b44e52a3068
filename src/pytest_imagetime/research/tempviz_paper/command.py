"""``imagetime tempviz``: the TempViz paper's evaluation of automatic methods.

``prf`` (Tables 4, 12, 13), ``random`` (the random baseline), ``pbs`` (Table 3) and ``sweep``
(Figure 4) read a human label table and a method's table; ``judge``, ``vqa-questions`` and
``vqa-answer`` produce method tables from stored images; ``label-export`` writes the
labelling form.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...judges.base import JudgeOptions
from ...tempviz.names import STYLES
from ..agreement.tables import TableError
from .evaluate import DEFAULT_SEED, DISTRIBUTIONS, OVERALL, THRESHOLDS, Prf
from .labels import COMBINED, SETTINGS, TARGETS

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
    from .evaluate import prf_by_category
    from .labels import pair_up, read_pair, require_labels, whole_prompt_column, yes_no

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
    from .evaluate import prf_by_category, random_predictions
    from .labels import label, read_keyed, require_labels

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
    from .labels import pair_up, read_pair, require_labels
    from .significance import point_biserial_test

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
    from .evaluate import best_thresholds, prf_by_category, random_predictions, sweep
    from .labels import pair_up, read_pair, require_labels

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
                        retries=args.retries, reasks=args.reasks)


def write_rows(path: str, columns: Sequence[str], rows: Sequence[Mapping[str, str]]) -> None:
    from ..labels.columns import write_csv

    write_csv(Path(path), columns, rows)


def _judge(args: argparse.Namespace) -> None:
    from ...tempviz.examples import ExamplesError
    from ...tempviz.exemplars import load_exemplars
    from ...tempviz.judge import WholePromptJudge
    from ...tempviz.prompts import TempvizDataError
    from .images import find_images
    from .judging import COLUMNS, judge_images, load_prompts

    try:
        prompts = load_prompts(Path(args.data))
        exemplars = load_exemplars(Path(args.exemplars), args.style) if args.exemplars else ()
    except (TempvizDataError, ExamplesError) as exc:
        raise ValueError(str(exc)) from None
    shots = args.shots if args.shots is not None else (3 if exemplars else 0)
    if shots and not exemplars:
        raise ValueError(f"--shots {shots} needs --exemplars")
    judge = WholePromptJudge(judge_options(args, args.judge_model), args.style, exemplars,
                             shots)
    rows = judge_images(judge, find_images(args.runs), prompts, args.concurrency)
    write_rows(args.out, COLUMNS, rows)
    failed = sum(1 for r in rows if r["error"])
    print(f"wrote {args.out}: {len(rows)} images judged by {judge.name}"
          + (f", {failed} without an answer" if failed else ""))


def _asker(args: argparse.Namespace, model: str, who: str) -> Any:
    from ...tempviz.judge import TextAsker
    from .vqa_runs import KEY_HINT

    return TextAsker(judge_options(args, model), who=who, key_hint=KEY_HINT)


def _vqa_questions(args: argparse.Namespace) -> None:
    from ...tempviz.prompts import TempvizDataError
    from .images import find_images
    from .judging import load_prompts
    from .vqa_runs import write_questions

    try:
        prompts = load_prompts(Path(args.data))
    except TempvizDataError as exc:
        raise ValueError(str(exc)) from None
    wanted = ({i.id for i in find_images(args.runs)} if args.runs else set(prompts))
    chosen = [p for key, p in prompts.items() if key in wanted]
    lines = write_questions(_asker(args, args.llm_model, "the question generator"), chosen,
                            Path(args.out), args.concurrency)
    failed = sum(1 for line in lines if "error" in line)
    asked = sum(len(line.get("questions", [])) for line in lines)
    print(f"wrote {args.out}: {asked} questions for {len(lines) - failed} prompts"
          + (f", {failed} prompts without questions" if failed else ""))


def _vqa_answer(args: argparse.Namespace) -> None:
    from .images import find_images
    from .vqa_runs import SCORE_COLUMNS, answer_images, read_questions

    questions = read_questions(Path(args.questions))
    rows, details = answer_images(_asker(args, args.vlm_model, "the VQA answerer"),
                                  find_images(args.runs), questions, args.concurrency)
    write_rows(args.out, SCORE_COLUMNS, rows)
    if args.details:
        Path(args.details).write_text("".join(json.dumps(d) + "\n" for d in details),
                                      encoding="utf-8")
    failed = sum(1 for r in rows if r["error"])
    print(f"wrote {args.out}: {len(rows)} images" + (f", {failed} without scores"
                                                       if failed else ""))


def _label_export(args: argparse.Namespace) -> None:
    from ...tempviz.prompts import TempvizDataError
    from ..labels.tempviz_form import export_tempviz
    from .images import find_images
    from .judging import load_prompts

    if args.sample < 1:
        raise ValueError("--sample must be at least 1")
    try:
        prompts = load_prompts(Path(args.data))
    except TempvizDataError as exc:
        raise ValueError(str(exc)) from None
    for path in export_tempviz(find_images(args.runs), prompts, Path(args.out), args.sample,
                               args.seed, args.annotator or "", args.max_px):
        print(f"wrote {path}")


def run(args: argparse.Namespace) -> int:
    commands: dict[str, Callable[[], None]] = {
        "label-export": lambda: _label_export(args),
        "vqa-questions": lambda: _vqa_questions(args),
        "vqa-answer": lambda: _vqa_answer(args),
        "judge": lambda: _judge(args),
        "prf": lambda: _print_prf(_prf(args), args.json),
        "random": lambda: _print_random(_random(args), args),
        "pbs": lambda: _print_pbs(_pbs(args), args),
        "sweep": lambda: _print_sweep(_sweep(args), args.json),
    }
    try:
        commands[args.tempviz_command]()
    except (TableError, ValueError) as exc:
        print(f"imagetime tempviz {args.tempviz_command}: {exc}", file=sys.stderr)
        return 2
    return 0


def add_parser(sub: Any) -> None:
    tempviz = sub.add_parser("tempviz", help="The TempViz paper's evaluation of automatic "
                             "methods against human labels (docs/tempviz.md).")
    commands = tempviz.add_subparsers(dest="tempviz_command", required=True)

    prf = commands.add_parser("prf", help="Macro precision, recall and F1 of a method's "
                              "yes/no answers, per category and overall (Tables 4, 12, 13).")
    prf.add_argument("human", help="Human labels: model, category, index, q1, q2, q3.")
    prf.add_argument("method", help="The method's table: answers.csv of a run, or the table "
                     "of imagetime tempviz judge.")
    prf.add_argument("--setting", choices=SETTINGS, default="paper",
                     help="paper: human q2 AND q3 against the method's one whole-prompt "
                     "answer (default); per-question: each human question against the "
                     "method's answer to the same question.")
    prf.add_argument("--column", help="The method's whole-prompt column (default: "
                     "prediction, else q3).")

    rnd = commands.add_parser("random", help="The random baseline against the human labels.")
    rnd.add_argument("human", help="Human labels: model, category, index, q1, q2, q3.")
    rnd.add_argument("--target", choices=TARGETS, default=COMBINED,
                     help=f"The human label predicted (default {COMBINED}).")

    pbs = commands.add_parser("pbs", help="Point-biserial correlation of a score with human "
                              "q2, q3 and q2 AND q3, with its t-test (Table 3).")
    pbs.add_argument("human", help="Human labels: model, category, index, q1, q2, q3.")
    pbs.add_argument("scores", help="A score table: imagetime baseline's, keyed model, "
                     "case_id (<Category>-<index>).")
    pbs.add_argument("--column", help="The score column (default: cosine where the table has "
                     "one, as CLIPScore's does, else score).")
    pbs.add_argument("--alpha", type=float, default=0.05,
                     help="Significance level of the asterisk (default 0.05).")
    pbs.add_argument("--by-category", action="store_true", help="Also one row per category.")

    sweep = commands.add_parser("sweep", help="Decompositional VQA: macro F1 per category "
                                "for each threshold on the share of correct answers (Fig. 4).")
    sweep.add_argument("human", help="Human labels: model, category, index, q1, q2, q3.")
    sweep.add_argument("method", help="The table of imagetime tempviz vqa-answer.")
    sweep.add_argument("--column", default="fraction",
                       help="The share of correct answers (default fraction).")
    sweep.add_argument("--thresholds", metavar="T,T,...",
                       help="Thresholds (default 0, 0.1, ..., 1).")
    for parser in (rnd, sweep):
        parser.add_argument("--distribution", choices=DISTRIBUTIONS, default="uniform",
                            help="The random baseline: yes with probability 1/2 (uniform, "
                            "default) or with the share of yes in the human labels of the "
                            "item's category (prior).")
        parser.add_argument("--seed", type=int, default=DEFAULT_SEED,
                            help=f"Seed of the random baseline (default {DEFAULT_SEED}).")

    for parser in (prf, rnd, pbs, sweep):
        parser.add_argument("--json", action="store_true", help="Print the results as JSON.")
        parser.set_defaults(func=run)

    judge = commands.add_parser("judge", help="The paper's judge: one whole-prompt question "
                                "per stored image, simple or instructed, 0- or k-shot.")
    judge.add_argument("runs", nargs="+", help="Output, model or <model>/tempviz directories.")
    judge.add_argument("--data", required=True, help="The directory of the TempViz tables.")
    judge.add_argument("--style", choices=STYLES, default="simple",
                       help="simple: the row's whole-prompt yes/no question (default); "
                       "instructed: the assessor prompt, ANALYSIS then RATING.")
    judge.add_argument("--exemplars", metavar="FILE", help="Exemplars (CSV or JSONL: image, "
                       "prompt, cue, answer, analysis, category).")
    judge.add_argument("--shots", type=int, help="Exemplars per item, none of the item's "
                       "category (default 3 with --exemplars, else 0).")
    judge.add_argument("--judge-model", default=JudgeOptions().model, help="The judge model.")
    _endpoint_arguments(judge)
    judge.add_argument("-o", "--out", required=True, metavar="TABLE.csv",
                       help="Table to write.")
    judge.set_defaults(func=run, writes=("out", "file"))

    questions = commands.add_parser("vqa-questions", help="Decompositional VQA, step 1: an "
                                    "LLM writes open and multiple-choice questions per prompt.")
    questions.add_argument("runs", nargs="*", help="Output, model or <model>/tempviz "
                           "directories: only the prompts of their images (default: every row).")
    questions.add_argument("--data", required=True, help="The directory of the TempViz tables.")
    questions.add_argument("--llm-model", default="meta-llama/Llama-3.3-70B-Instruct",
                           help="The question generator (default: the paper's).")
    _endpoint_arguments(questions)
    questions.add_argument("-o", "--out", required=True, metavar="QUESTIONS.jsonl",
                           help="Questions file to write.")
    questions.set_defaults(func=run, writes=("out", "file"))

    answer = commands.add_parser("vqa-answer", help="Decompositional VQA, step 2: a VLM "
                                 "answers the questions about each image; the share correct.")
    answer.add_argument("runs", nargs="+", help="Output, model or <model>/tempviz directories.")
    answer.add_argument("--questions", required=True, help="The file of vqa-questions.")
    answer.add_argument("--vlm-model", default="Qwen/Qwen2.5-VL-32B-Instruct",
                        help="The answerer (default: the paper's).")
    answer.add_argument("--details", metavar="FILE.jsonl", help="Also write every question, "
                        "reply and verdict.")
    _endpoint_arguments(answer)
    answer.add_argument("-o", "--out", required=True, metavar="TABLE.csv",
                        help="Score table to write.")
    answer.set_defaults(func=run, writes=("out", "file"))

    export = commands.add_parser("label-export", help="Human labels: a sample balanced across "
                                 "categories and models as a form with Q1-Q3 (form.html) and "
                                 "items.csv.")
    export.add_argument("runs", nargs="+", help="Output, model or <model>/tempviz directories.")
    export.add_argument("--data", required=True, help="The directory of the TempViz tables.")
    export.add_argument("--sample", type=int, default=500, metavar="N",
                        help="How many images (default 500, the paper's).")
    export.add_argument("--seed", type=int, default=0, help="Seed of the draw (default 0).")
    export.add_argument("-o", "--out", required=True, metavar="DIR", help="Folder to write.")
    export.add_argument("--annotator", help="Annotator name filled into the form.")
    export.add_argument("--max-px", type=int, default=1024,
                        help="Scale larger images down to this many pixels (default 1024).")
    export.set_defaults(func=run, writes=("out", "folder"))


def _endpoint_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = JudgeOptions()
    parser.add_argument("--base-url", help="OpenAI-compatible base URL (default: "
                        "OPENAI_BASE_URL, else OpenAI).")
    parser.add_argument("--key-env", default=defaults.key_env or "none",
                        help="Variable holding the API key; 'none' for a server without keys.")
    parser.add_argument("--concurrency", type=int, default=defaults.concurrency,
                        help="Requests at once.")
    parser.add_argument("--timeout", type=float, default=defaults.timeout_s,
                        help="Seconds per request.")
    parser.add_argument("--retries", type=int, default=defaults.retries,
                        help="Transport retries of one request.")
    parser.add_argument("--reasks", type=int, default=defaults.reasks,
                        help="Requests again after an unusable answer.")
