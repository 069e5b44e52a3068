"""The ``imagetime probe-order`` parser and its argument types; the runner is ``runs.py``."""

from __future__ import annotations

import argparse
from typing import Any

from ...judges.base import JudgeOptions
from .causality import ASPECTS

DEFAULT_OUT = "order-probe.json"
DEFAULT_ASPECTS = ("order",)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give an integer of 1 or more")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a non-negative integer")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give seconds, a number above 0")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 0.5:
        raise argparse.ArgumentTypeError(f"{text!r}: give a fraction from 0 to 0.5")
    return value


def _aspects(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in ASPECTS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"{text!r}: give one or more of {', '.join(ASPECTS)}, "
                                         f"separated by commas")
    return names


def add_parser(sub: Any) -> None:
    """Register ``probe-order`` on the ``imagetime`` parser's subparsers."""
    defaults = JudgeOptions()
    probe = sub.add_parser("probe-order", help="Ask a judge to order the panels of stored "
                           "sheets (pairs both ways, four shuffled): judge fitness and "
                           "temporal evidence per model (docs/order-probe.md).")
    probe.add_argument("runs", nargs="+", help="Model run directories holding images/ (e.g. "
                       "reports/procedural), or output directories of several.")
    probe.add_argument("--cases", action="append", help="Case files or folders, for domains "
                       "and actions (default: the packaged cases); repeatable.")
    probe.add_argument("--judge-model", default=defaults.model,
                       help=f"Model to ask (default: {defaults.model}).")
    probe.add_argument("--base-url", help="OpenAI-compatible base URL (default: "
                       "$OPENAI_BASE_URL, else OpenAI).")
    probe.add_argument("--key-env", default=defaults.key_env or "none",
                       help=f"Environment variable holding the API key (default: "
                       f"{defaults.key_env}); 'none' for a server without keys.")
    probe.add_argument("--concurrency", type=_positive, default=defaults.concurrency,
                       help=f"Requests in flight at once (default: {defaults.concurrency}).")
    probe.add_argument("--timeout", type=_seconds, default=defaults.timeout_s,
                       help=f"Seconds one request may take (default: {defaults.timeout_s:g}).")
    probe.add_argument("--retries", type=_non_negative, default=defaults.retries,
                       help=f"Transport retries of one request (429, 5xx, timeouts, resets; "
                       f"default: {defaults.retries}).")
    probe.add_argument("--reasks", type=_non_negative, default=defaults.reasks,
                       help=f"Requests again after an unusable answer (default: "
                       f"{defaults.reasks}); then the probe is an error.")
    probe.add_argument("--seed", type=_non_negative, default=0,
                       help="Seed of the shuffled grids and of --sample (default: 0).")
    probe.add_argument("--sample", type=_positive,
                       help="Probe a seeded sample of N sheets per run (default: all).")
    probe.add_argument("--cover-corner", type=_fraction, default=0.0,
                       help="Cover this fraction of each panel's top-left corner, where stage "
                       "labels are drawn (default: 0, nothing covered).")
    probe.add_argument("--aspects", type=_aspects, default=DEFAULT_ASPECTS,
                       help="TimeCausality's aspects to ask, separated by commas: order (the "
                       "pairs both ways and the shuffled grid), reasoning (why the top panel is "
                       "later), inferring (what caused the change); default: order.")
    probe.add_argument("--rater-model", help="Model that rates the reasoning and inferring "
                       "answers 0-5 against the ground truth (default: the judge model).")
    probe.add_argument("--rater-base-url", help="OpenAI-compatible base URL of the rater "
                       "(default: --base-url's).")
    probe.add_argument("--rater-key-env", help="Environment variable holding the rater's API "
                       "key, 'none' for a server without keys (default: --key-env's).")
    probe.add_argument("--json", action="store_true", help="Print the JSON report.")
    probe.add_argument("-o", "--out", default=DEFAULT_OUT,
                       help=f"JSON report to write (default: {DEFAULT_OUT}).")
    probe.set_defaults(runner="pytest_imagetime.research.probe.runs:probe_order",
                       writes=("out", "file"))
