"""The runner of ``imagetime probe-order``: the probe over stored sheets and its written report."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...backends.openai_client import safe_url
from ...judges.ask import JsonAsker
from ...judges.base import JudgeOptions
from ...store.atomic import atomic_write_json
from ..cases import command_cases
from .order import ProbeSettings, load_run, model_dirs, probe_runs
from .order_report import build_report, report_lines, validate_report

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
