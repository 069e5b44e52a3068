"""The parsers of ``imagetime agree``, ``human-agree`` and ``judges-agree``; each names its runner
(``command.py``, ``human.py``, ``judges.py``), which the command imports only when it runs."""

from __future__ import annotations

from typing import Any

from .tables import LABEL_TYPES

NORMALISATIONS = ("z", "minmax")
TAUS = ("b", "a")
MIN_RATERS = 8  # the paper: every case is rated by at least 8 raters


def agree_parser(sub: Any) -> None:
    agree = sub.add_parser(
        "agree", help="Agreement between two label tables (people, judges): kappa, "
        "correlations, precision/recall/F1, per group and overall.")
    agree.add_argument("a", help="Table A, CSV or JSONL (the reference for precision/recall).")
    agree.add_argument("b", help="Table B, CSV or JSONL.")
    agree.add_argument("--on", required=True, metavar="KEY[,KEY...]",
                       help="Key columns that join the tables, e.g. model,case_id.")
    agree.add_argument("--label", required=True, metavar="COLUMN", help="Label column of A "
                       "(and of B unless --label-b).")
    agree.add_argument("--label-b", metavar="COLUMN", help="Label column of B.")
    agree.add_argument("--by", metavar="COLUMN", help="Also report per value of this column.")
    agree.add_argument("--type", choices=LABEL_TYPES, help="Compare the labels as this type "
                       "instead of detecting it.")
    agree.add_argument("--json", action="store_true", help="Print the results as JSON.")
    agree.set_defaults(runner="pytest_imagetime.research.agreement.command:run")


def human_agree_parser(sub: Any) -> None:
    human = sub.add_parser(
        "human-agree", help="A metric against human ratings as UI2V-Bench computes it: "
        "per-rater normalisation, mean over raters, Kendall's tau and Spearman's rho.")
    human.add_argument("ratings", help="Ratings, CSV or JSONL: rater,item,score[,dimension].")
    human.add_argument("metric", help="Metric scores, CSV or JSONL: item,score[,dimension].")
    human.add_argument("--normalise", choices=NORMALISATIONS, default="z",
                       help="Each rater's scores within a dimension: z-score (default) or "
                       "min-max.")
    human.add_argument("--tau", choices=TAUS, default="b", help="Kendall's tau-b (default, "
                       "ties corrected) or tau-a.")
    human.add_argument("--min-raters", type=int, default=MIN_RATERS,
                       help=f"Items with fewer raters are left out (default {MIN_RATERS}).")
    human.add_argument("--json", action="store_true", help="Print the results as JSON.")
    human.set_defaults(runner="pytest_imagetime.research.agreement.human:run")


def judges_agree_parser(sub: Any) -> None:
    agree = sub.add_parser("judges-agree", help="Agreement of two judges' stored judgments "
                           "of the same sheets: verdicts, and C0/D8/D9/D13 "
                           "(docs/question-chain.md).")
    agree.add_argument("run", help="Model run directory holding both judges' folders "
                       "(e.g. reports/procedural).")
    agree.add_argument("--a", default="vlm", help="First judge (default: vlm).")
    agree.add_argument("--b", default="vlm-chain", help="Second judge (default: vlm-chain).")
    agree.add_argument("--cases", action="append", help="Case files or folders, for domains "
                       "(default: the packaged cases); repeatable.")
    agree.add_argument("--json", action="store_true", help="Print JSON.")
    agree.set_defaults(runner="pytest_imagetime.research.agreement.judges:run")
