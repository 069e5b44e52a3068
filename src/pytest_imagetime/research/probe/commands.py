"""The ``imagetime probe-order`` subcommand."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...judges.base import JudgeOptions
from ...store.atomic import atomic_write_json
from ..cases import command_cases
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


# Where the order probe's endpoint settings are, for a failing endpoint's message.
PROBE_HINTS = {"base_url_option": "--base-url", "key_option": "--key-env",
               "model_option": "--judge-model", "timeout_option": "--timeout",
               "params_option": "the probe's parameters"}
RATER_HINTS = {"base_url_option": "--rater-base-url", "key_option": "--rater-key-env",
               "model_option": "--rater-model", "timeout_option": "--timeout",
               "params_option": "the probe's parameters"}
KEY_HINT = "--key-env NAME for another variable, 'none' for a server without keys"
RATER_KEY_HINT = "--rater-key-env NAME for another variable, 'none' for a server without keys"


def _fail(command: str, message: object) -> int:
    print(f"imagetime {command}: {message}", file=sys.stderr)
    return 2


def probe_order(args: argparse.Namespace) -> int:
    from ...backends.openai_client import safe_url
    from ...judges.ask import JsonAsker
    from .order import ProbeSettings, load_run, model_dirs, probe_runs
    from .order_report import build_report, report_lines, validate_report

    cases = command_cases("probe-order", args.cases)
    if cases is None:
        return 2
    dirs = model_dirs(Path(p) for p in args.runs)
    if not dirs:
        return _fail("probe-order", f"no stored sheets (an images/ folder) under "
                                    f"{', '.join(args.runs)}")
    runs = [load_run(d, cases, args.sample, args.seed) for d in dirs]
    key_env = None if args.key_env.lower() == "none" else args.key_env
    options = JudgeOptions(model=args.judge_model, base_url=args.base_url, key_env=key_env,
                           concurrency=args.concurrency, timeout_s=args.timeout,
                           retries=args.retries, reasks=args.reasks)
    rater_key_env = key_env if args.rater_key_env is None else \
        None if args.rater_key_env.lower() == "none" else args.rater_key_env
    rater_options = JudgeOptions(model=args.rater_model or args.judge_model,
                                 base_url=args.rater_base_url or args.base_url,
                                 key_env=rater_key_env, concurrency=args.concurrency,
                                 timeout_s=args.timeout, retries=args.retries,
                                 reasks=args.reasks)
    settings = ProbeSettings(judge_model=args.judge_model, seed=args.seed,
                             cover_corner=args.cover_corner, concurrency=args.concurrency,
                             aspects=args.aspects, rater_model=args.rater_model)
    made: dict[str, JsonAsker] = {}

    def asker() -> JsonAsker:
        made["judge"] = JsonAsker(options, who="the order probe", key_hint=KEY_HINT,
                                  hints=PROBE_HINTS)
        return made["judge"]

    def rater() -> JsonAsker:
        made["rater"] = JsonAsker(rater_options, who="the order probe's rater",
                                  key_hint=RATER_KEY_HINT, hints=RATER_HINTS)
        return made["rater"]

    try:
        outcomes = probe_runs(runs, settings, asker, rater)
    except (ValueError, ImportError) as exc:
        return _fail("probe-order", exc)

    def endpoint(role: str, given: JudgeOptions) -> dict[str, Any]:
        used = made.get(role)
        price = used.price if used else None
        return {"model": given.model,
                "base_url": used.base_url if used else safe_url(given.base_url),
                "price_usd_per_mtok": price.per_mtok() if price else None}

    rates = any(aspect != "order" for aspect in settings.aspects)
    report = build_report(runs, outcomes, settings, endpoint("judge", options),
                          datetime.now(timezone.utc).isoformat(timespec="seconds"),
                          sample=args.sample,
                          rater=endpoint("rater", rater_options) if rates else None)
    validate_report(report)
    out = Path(args.out)
    atomic_write_json(out, report)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        for line in report_lines(report):
            print(line)
        print(f"report: {out}")
    return 1 if report["judge_fitness"]["status"] == "unfit" else 0


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
    probe.set_defaults(func=probe_order, writes=("out", "file"))
