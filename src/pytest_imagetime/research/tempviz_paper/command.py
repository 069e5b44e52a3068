"""``imagetime tempviz``: the parser of the TempViz paper's evaluation of automatic methods.

``prf`` (Tables 4, 12, 13), ``random`` (the random baseline), ``pbs`` (Table 3) and ``sweep``
(Figure 4) read a human label table and a method's table; ``judge``, ``vqa-questions`` and
``vqa-answer`` produce method tables from stored images; ``label-export`` writes the
labelling form. Each names its runner in ``runs.py``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TypeVar

from ...backends.prices import parse_rates, parse_usd
from ...judges.base import JudgeOptions
from ...tempviz.names import STYLES
from .choices import DEFAULT_SEED, DISTRIBUTIONS
from .labels import COMBINED, SETTINGS, TARGETS

T = TypeVar("T")

RUNS = "pytest_imagetime.research.tempviz_paper.runs"


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

    for parser, runner in ((prf, "prf"), (rnd, "random_baseline"), (pbs, "pbs"),
                           (sweep, "threshold_sweep")):
        parser.add_argument("--json", action="store_true", help="Print the results as JSON.")
        parser.set_defaults(runner=f"{RUNS}:{runner}")

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
    _asking_arguments(judge, "<model>/tempviz/paper-judge, beside each run's images")
    judge.add_argument("-o", "--out", required=True, metavar="TABLE.csv",
                       help="Table to write.")
    judge.set_defaults(runner=f"{RUNS}:judge", writes=("out", "file"))

    questions = commands.add_parser("vqa-questions", help="Decompositional VQA, step 1: an "
                                    "LLM writes open and multiple-choice questions per prompt.")
    questions.add_argument("runs", nargs="*", help="Output, model or <model>/tempviz "
                           "directories: only the prompts of their images (default: every row).")
    questions.add_argument("--data", required=True, help="The directory of the TempViz tables.")
    questions.add_argument("--llm-model", default="meta-llama/Llama-3.3-70B-Instruct",
                           help="The question generator (default: the paper's).")
    _endpoint_arguments(questions)
    _asking_arguments(questions, "paper-vqa-questions beside the questions file")
    questions.add_argument("-o", "--out", required=True, metavar="QUESTIONS.jsonl",
                           help="Questions file to write.")
    questions.set_defaults(runner=f"{RUNS}:vqa_questions", writes=("out", "file"))

    answer = commands.add_parser("vqa-answer", help="Decompositional VQA, step 2: a VLM "
                                 "answers the questions about each image; the share correct.")
    answer.add_argument("runs", nargs="+", help="Output, model or <model>/tempviz directories.")
    answer.add_argument("--questions", required=True, help="The file of vqa-questions.")
    answer.add_argument("--vlm-model", default="Qwen/Qwen2.5-VL-32B-Instruct",
                        help="The answerer (default: the paper's).")
    answer.add_argument("--details", metavar="FILE.jsonl", help="Also write every question, "
                        "reply and verdict.")
    _endpoint_arguments(answer)
    _asking_arguments(answer, "<model>/tempviz/paper-vqa, beside each run's images")
    answer.add_argument("-o", "--out", required=True, metavar="TABLE.csv",
                        help="Score table to write.")
    answer.set_defaults(runner=f"{RUNS}:vqa_answer", writes=("out", "file"))

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
    export.set_defaults(runner=f"{RUNS}:label_export", writes=("out", "folder"))


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


def _command_line(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse`` as an argparse type: its message, after the value, on a usage error."""
    def convert(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None
    return convert


def _asking_arguments(parser: argparse.ArgumentParser, store: str) -> None:
    """Prices, the budget and the answer store of the commands that ask an endpoint."""
    parser.add_argument("--price", type=_command_line(parse_rates), metavar="IN,OUT[,CACHED]",
                        help="The model's price in USD per 1M tokens (cached input defaults "
                        "to IN), overriding the shipped table; 0,0 for a server of your own.")
    parser.add_argument("--prices", metavar="FILE", help="JSON price table to use beside the "
                        "shipped one (docs/judging.md).")
    parser.add_argument("--max-cost", type=_command_line(parse_usd), metavar="USD",
                        help="Stop asking once this many USD are spent; what is not asked is "
                        "an error row. Needs a known price.")
    kept = parser.add_mutually_exclusive_group()
    kept.add_argument("--store", metavar="DIR", help=f"Keep every answer in DIR as it "
                      f"arrives and reuse it on a rerun (default: {store}).")
    kept.add_argument("--no-store", action="store_true", help="Ask every question again "
                      "and keep no answer.")
