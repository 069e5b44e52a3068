"""Command-line and ini options, parsed once into a typed, validated ``Options``.

Every option is ``--imagetime-*`` on the command line and ``imagetime_*`` in the ini file
(pytest.ini, tox.ini, setup.cfg or ``[tool.pytest.ini_options]``); the command line wins.
A path from the ini file (also one in a ``files:DIR`` or ``replay:DIR`` spec) is relative to
the ini file's folder, as pytest's own are; one from the command line to the working
directory. A switch set in the ini file is turned off for one run with
``--imagetime-no-NAME``. Bad values stop the run at start-up with a message that
names the option, echoes the value and says what is accepted.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..backends.prices import PriceError, parse_rates
from ..judges.base import JudgeOptions
from ..models.base import ModelOptions
from ..models.devices import DeviceError, parse_devices, worker_index
from ..rubric.facts import SETTINGS, Setting
from ..sheet.prompts import SHEET, GridError, parse_grid
from . import shards
from .shards import Shard

SUITES = ("imagetime", "tempviz")
DEFAULT_JUDGE = "vlm"
DEFAULT_OUT = "reports"
DEFAULT_SIZE = 1024
DEFAULT_PASS_THRESHOLD = 5.0


@dataclass(frozen=True)
class Options:
    models: tuple[str, ...]
    judge: str
    out: Path
    setting: Setting
    size: int
    seed: int
    pass_threshold: float
    regenerate: bool
    rejudge: bool
    junit: Path | None
    judge_options: JudgeOptions
    max_cost: float | None
    dry_run: bool
    canaries: bool
    shard: tuple[int, int] | None  # (K, N): this process group runs share K of N
    baseline: Path | None
    max_drop: dict[str, float]
    floors: dict[str, float]
    update_baseline: bool
    gate_significant: bool
    allow_judge_change: bool
    progress_every_s: float
    judge_repeats: int
    html: Path | None
    model_options: ModelOptions = field(default_factory=ModelOptions)
    reference_dir: Path | None = None
    reference_model: str | None = None
    grid: tuple[int, int] = SHEET
    shard_source: str = ""  # the batch system's variable that --imagetime-shard=auto read
    suite: str = "imagetime"
    judge_batch: bool = False  # judge through the Batch API (judges/batch.py)
    judge_batch_poll_s: float = 30.0
    limit: int | None = None  # --imagetime-limit: at most this many cases, every domain first

    @property
    def active(self) -> bool:
        """The ImageTime suite runs: a model is given and no other suite is chosen."""
        return bool(self.models) and self.suite == "imagetime"


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("imagetime", "ImageTime benchmark")

    def option(name: str, help: str, ini_type: Any = "string", **kwargs: Any) -> None:
        dest = "imagetime_" + name.replace("-", "_")
        group.addoption(f"--imagetime-{name}", dest=dest, help=help, **kwargs)
        parser.addini(dest, help=help, type=ini_type, default=None)
        if ini_type == "bool":
            group.addoption(f"--imagetime-no-{name}", dest=dest, action="store_false",
                            default=None, help=f"Turn --imagetime-{name} off for this run "
                            f"(when the ini file sets {dest}).")

    option("model", "Image model to benchmark, as NAME or NAME:ARG (procedural, "
           "procedural:copied, files:DIR, ...); repeat for several. Without it the plugin "
           "collects nothing.", ini_type="args", action="append", default=None)
    option("suite", f"Benchmark suite: {' or '.join(SUITES)} (default: imagetime); tempviz "
           "needs --imagetime-tempviz-data.")
    option("judge", f"Judge that scores the sheets (default: {DEFAULT_JUDGE}).")
    model_defaults = ModelOptions()
    option("devices", "Accelerators for local backends: auto (default: one GPU per xdist "
           "worker, round robin, within CUDA_VISIBLE_DEVICES), cpu, or GPU numbers 0,1,...")
    option("batch-size", "Sheets per backend call for backends that batch (diffusers); "
           "default: 1.")
    option("model-base-url", "OpenAI-compatible base URL for hosted image backends (default: "
           "$OPENAI_BASE_URL, else OpenAI).")
    option("model-key-env", f"Environment variable holding the image backend's API key "
           f"(default: {model_defaults.key_env}); 'none' for a server without keys.")
    option("model-concurrency", f"Hosted image requests in flight at once, per pytest process "
           f"(default: {model_defaults.concurrency}).")
    option("model-timeout", f"Seconds one hosted image request may take (default: "
           f"{model_defaults.timeout_s:g}); then the item is an error.")
    option("model-retries", f"Transport retries of a hosted image request (429, 5xx, timeouts; "
           f"default: {model_defaults.retries}); never a retry for quality.")
    option("model-header", "Extra HTTP header for hosted image requests as NAME=VALUE (a "
           "gateway's routing or key header; VALUE $VAR reads the environment variable VAR); "
           "repeatable.", ini_type="args", action="append", default=None)
    option("model-process", "Draw in a process of its own, so that storing, measuring and "
           "judging never hold the interpreter lock the backend dispatches its kernels with: "
           "auto (default: backends that draw on a GPU), on, off.")
    option("reference-dir", "Scaffold setting: reference images of the initial state, "
           "DIR/<case id>.png (or .jpg, .jpeg, .webp).")
    option("reference-model", "Scaffold setting: draw each case's reference once with this "
           "model (a model spec) and keep it under OUT/_references/.")
    option("grid", "2x2 (the benchmark, default) or a dense grid 4x2, 4x4, 4x6, 4x8 (four "
           "temporal rows of N panels): qualitative, generated into a gallery, never scored.")
    option("out", f"Directory for images, judgments and reports (default: {DEFAULT_OUT}).")
    option("setting", "Benchmark setting: prompt-only (default) or scaffold.")
    option("size", f"Sheet size in pixels, square (default: {DEFAULT_SIZE}).")
    option("seed", "Run seed; each case's seed derives from it and the case id (default: 0).")
    option("pass-threshold", "Post-cap Overall an item needs to pass "
           f"(0-10, default: {DEFAULT_PASS_THRESHOLD}).")
    option("regenerate", "Generate every image again, ignoring stored ones.",
           ini_type="bool", action="store_true", default=None)
    option("rejudge", "Judge every sheet again, ignoring stored judgments.",
           ini_type="bool", action="store_true", default=None)
    option("junit", "Where the plugin writes its own JUnit XML (default: OUT/junit.xml, unless "
           "pytest's --junitxml writes one; 'none' writes none).")
    defaults = JudgeOptions()
    option("judge-model", f"Model the vlm judge asks (default: {defaults.model}).")
    option("judge-base-url", "OpenAI-compatible base URL for the vlm judge (default: "
           "$OPENAI_BASE_URL, else OpenAI), e.g. http://localhost:8000/v1 for vLLM.")
    option("judge-key-env", f"Environment variable holding the judge's API key (default: "
           f"{defaults.key_env}); 'none' for a server without keys.")
    option("judge-concurrency", f"Judge calls in flight at once, per pytest process (default: "
           f"{defaults.concurrency}); under -n N a run makes up to N times as many.")
    option("judge-timeout", f"Seconds one judge request may take (default: "
           f"{defaults.timeout_s:g}).")
    option("judge-retries", f"Transport retries of one judge request (429, 5xx, timeouts, "
           f"resets; default: {defaults.retries}).")
    option("judge-reasks", f"Requests again after a judge answer that is not usable (not JSON, "
           f"wrong shape, refused, cut off; default: {defaults.reasks}); then the item is an "
           f"error. At most (reasks + 1) x (retries + 1) requests a sheet.")
    option("judge-header", "Extra HTTP header for judge requests as NAME=VALUE (a gateway's "
           "routing or key header; VALUE $VAR reads the environment variable VAR); "
           "repeatable.", ini_type="args", action="append", default=None)
    option("judge-param", "Extra request parameter for the judge as KEY=VALUE (VALUE as JSON "
           "when it parses, e.g. reasoning_effort=high, max_completion_tokens=16000, seed=7); "
           "repeatable.",
           ini_type="args", action="append", default=None)
    option("judge-price", "Judge price as IN,OUT[,CACHED] USD per 1M tokens (cached input "
           "defaults to IN; Batch API rates are half), overriding the shipped table.")
    option("judge-prices", "JSON price table {\"prices\": {model: [in, out]}} or "
           "{model: {input, cached_input, output, batch}} to use beside the shipped one.")
    option("judge-response-format", "json_schema (structured outputs, default) or json_object "
           "for servers without schema support.")
    option("max-cost", "Stop issuing new judge calls once this many USD are spent (split "
           "evenly over xdist workers); unjudged items become errors.")
    option("dry-run", "Print how many items need a judge call and the estimated cost, then "
           "stop: nothing is generated or judged.", ini_type="bool", action="store_true",
           default=None)
    option("judge-batch", "Judge through OpenAI's Batch API (half price, results within 24 h): "
           "every sheet is drawn first, then judged in batches; a killed run re-attaches to "
           "the batches it submitted (docs/batch.md).", ini_type="bool", action="store_true",
           default=None)
    option("judge-batch-poll", "Seconds between two looks at a submitted batch (default 30).")
    option("shard", "Run one deterministic, balanced share of the cases as K/N (1 <= K <= N), "
           "e.g. for a CI matrix or a Slurm array, or 'auto' ('auto/N') to take K (and N) from "
           "SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX or CI_NODE_INDEX; give each shard its own "
           "--imagetime-out and join them with 'imagetime merge' (docs/shards.md).")
    option("limit", "Run at most N cases for a quick smoke run that still covers every domain: "
           "round-robin over the domains, each domain's cases in a stable order (by a hash of "
           "the case id); applied to the selection before --imagetime-shard splits it "
           "(docs/shards.md).")
    option("baseline", "Baseline to gate on: a report.json (for every run) or an output "
           "directory holding <model>/<judge>/report.json per run.")
    option("max-drop", "Tolerated drops below the baseline, e.g. L5:0.3,overall:0.2 (metrics: "
           "overall, c_mean, d_mean, protocol (the tree's protocol node), L0-L6, C0-C9, "
           "D0-D14).")
    option("min", "Absolute floors, e.g. L3:6.0,overall:5 (same metrics).")
    option("update-baseline", "Write this run's reports as the new baseline.",
           ini_type="bool", action="store_true", default=None)
    option("gate-significant", "Breach a tolerance only when the drop is significant (95 per cent "
           "paired bootstrap interval over the cases entirely beyond it).", ini_type="bool",
           action="store_true", default=None)
    option("allow-judge-change", "Compare with a baseline scored by another judge, judge "
           "prompt or rubric (normally refused).", ini_type="bool", action="store_true",
           default=None)
    option("judge-repeats", "Judge every sheet K times and combine them (lower median per "
           "dimension, majority per predicate) to damp judge noise (default: 1).")
    option("html", "Also write the HTML report (leaderboard and case pages) into this folder; "
           "JUnit failures then link to their case page.")
    option("progress", "Seconds between progress lines (done/total, errors, running Overall, "
           "spend, ETA); 0 turns them off (default: 30).")
    option("canaries", "Judge a fixed set of procedural good and broken sheets at the start "
           "and record their scores, so a change in a hosted judge shows in the report.",
           ini_type="bool", action="store_true", default=None)


_ABSENT = object()


def registered(config: pytest.Config, dest: str) -> bool:
    """Whether a plugin registered this option (``-p no:NAME`` leaves a plugin's out)."""
    return config.getoption(dest, default=_ABSENT) is not _ABSENT


def _given(config: pytest.Config, name: str) -> tuple[Any, Path]:
    """The option's value (None when not given) and the folder a relative path in it is
    relative to: the working directory for the command line, the ini file's for the ini file
    (pytest's rule for its own paths, ``-o`` included)."""
    dest = "imagetime_" + name.replace("-", "_")
    value = config.getoption(dest)
    if value is not None and value != []:
        return value, config.invocation_params.dir
    value = config.getini(dest)
    base = config.inipath.parent if config.inipath is not None else config.invocation_params.dir
    return (value if value not in ("", [], None) else None), base


def raw_value(config: pytest.Config, name: str) -> Any:
    """The option's value as given (the command line, else the ini file); None if neither."""
    return _given(config, name)[0]


def option_path(config: pytest.Config, name: str) -> Path | None:
    """A path option, absolute: ``~`` expanded, a relative one joined to its folder."""
    raw, base = _given(config, name)
    if raw is None:
        return None
    path = Path(str(raw)).expanduser()
    return path if path.is_absolute() else base / path


def _fail(name: str, value: object, accepted: str) -> pytest.UsageError:
    return pytest.UsageError(f"--imagetime-{name}={value}: {accepted}")


def _number(config: pytest.Config, name: str, kind: type, default: Any,
            low: float, high: float, accepted: str) -> Any:
    value = raw_value(config, name)
    if value is None:
        return default
    try:
        number = kind(str(value))
    except ValueError:
        raise _fail(name, value, accepted) from None
    if not low <= number <= high:
        raise _fail(name, value, accepted)
    return number


def _flag(config: pytest.Config, name: str) -> bool:
    """On with --imagetime-NAME, off with --imagetime-no-NAME, else as the ini file says."""
    dest = "imagetime_" + name.replace("-", "_")
    value = config.getoption(dest)
    return bool(config.getini(dest) if value is None else value)


def _judge_params(config: pytest.Config) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for item in raw_value(config, "judge-param") or []:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise _fail("judge-param", item, "give KEY=VALUE, e.g. reasoning_effort=high")
        try:
            params[key.strip()] = json.loads(value)
        except ValueError:
            params[key.strip()] = value
    return params


_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def _headers(config: pytest.Config, name: str) -> dict[str, str]:
    """``NAME=VALUE`` headers; a VALUE ``$VAR`` or ``${VAR}`` is read from the environment."""
    headers: dict[str, str] = {}
    for item in raw_value(config, name) or []:
        key, sep, value = str(item).partition("=")
        key = key.strip()
        if not sep or not _HEADER_NAME.match(key):
            raise _fail(name, item, "give NAME=VALUE with an HTTP header name, e.g. "
                                    "X-Gateway-Route=imagetime or X-Api-Key=$GATEWAY_KEY")
        variable = re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", value.strip())
        if variable:
            value = os.environ.get(variable.group(1), "")
            if not value:
                raise _fail(name, item, f"the environment variable {variable.group(1)} is "
                                        f"not set")
        headers[key] = value
    return headers


def _price(config: pytest.Config) -> tuple[float, ...] | None:
    raw = raw_value(config, "judge-price")
    if raw is None:
        return None
    try:
        return parse_rates(str(raw))
    except PriceError as exc:
        raise _fail("judge-price", raw, str(exc)) from None


def parse_shard(raw: object) -> Shard | None:
    if raw is None:
        return None
    try:
        return shards.parse_shard(str(raw), os.environ)
    except shards.ShardError as exc:
        raise _fail("shard", raw, str(exc)) from None


def judge_options(config: pytest.Config) -> JudgeOptions:
    defaults = JudgeOptions()
    key_env = str(raw_value(config, "judge-key-env") or defaults.key_env)
    response = str(raw_value(config, "judge-response-format") or defaults.response_format)
    if response not in ("json_schema", "json_object"):
        raise _fail("judge-response-format", response, "use json_schema or json_object")
    prices = option_path(config, "judge-prices")
    return JudgeOptions(
        model=str(raw_value(config, "judge-model") or defaults.model),
        base_url=raw_value(config, "judge-base-url"),
        key_env=None if key_env.lower() == "none" else key_env,
        concurrency=_number(config, "judge-concurrency", int, defaults.concurrency, 1, 1024,
                            "give an integer from 1 to 1024"),
        timeout_s=_number(config, "judge-timeout", float, defaults.timeout_s, 0.01, 86400,
                          "give seconds, a number above 0"),
        retries=_number(config, "judge-retries", int, defaults.retries, 0, 100,
                        "give an integer from 0 to 100"),
        reasks=_number(config, "judge-reasks", int, defaults.reasks, 0, 100,
                       "give an integer from 0 to 100"),
        params=_judge_params(config),
        headers=_headers(config, "judge-header"),
        price_per_mtok=_price(config),
        prices_file=prices,
        response_format=response,
        spec_dir=_given(config, "judge")[1],
    )


def model_options(config: pytest.Config) -> ModelOptions:
    defaults = ModelOptions()
    try:
        devices = parse_devices(str(raw_value(config, "devices") or "auto"))
    except DeviceError as exc:
        raise _fail("devices", raw_value(config, "devices"), str(exc)) from None
    key_env = str(raw_value(config, "model-key-env") or defaults.key_env)
    return ModelOptions(
        devices=devices,
        worker_index=worker_index(),
        batch_size=_number(config, "batch-size", int, defaults.batch_size, 1, 1024,
                           "give an integer from 1 to 1024"),
        base_url=raw_value(config, "model-base-url"),
        key_env=None if key_env.lower() == "none" else key_env,
        timeout_s=_number(config, "model-timeout", float, defaults.timeout_s, 0.01, 86400,
                          "give seconds, a number above 0"),
        retries=_number(config, "model-retries", int, defaults.retries, 0, 100,
                        "give an integer from 0 to 100"),
        headers=_headers(config, "model-header"),
        concurrency=_number(config, "model-concurrency", int, defaults.concurrency, 1, 1024,
                            "give an integer from 1 to 1024"),
        process=_model_process(config),
        spec_dir=_given(config, "model")[1],
    )


def _model_process(config: pytest.Config) -> str:
    # Read when a model is given: the own-process backend is loaded only for a run.
    from ..models.own_process import PROCESS_CHOICES

    raw = raw_value(config, "model-process")
    choice = str(raw or "auto").strip().lower()
    if choice not in PROCESS_CHOICES:
        raise _fail("model-process", raw, f"use one of {', '.join(PROCESS_CHOICES)}")
    return choice


def _grid(config: pytest.Config, setting: str) -> tuple[int, int]:
    raw = raw_value(config, "grid")
    if raw is None:
        return SHEET
    try:
        grid = parse_grid(str(raw))
    except GridError as exc:
        raise _fail("grid", raw, str(exc)) from None
    if grid != SHEET and setting != "prompt-only":
        raise _fail("grid", raw, "dense grids are prompt-only; leave out --imagetime-setting")
    return grid


# pytest's switches for sessions that list or collect and run nothing.
_LISTING = ("collectonly", "setupplan", "showfixtures", "show_fixtures_per_test")


def for_session(config: pytest.Config, options: Options) -> Options:
    """The options a session gives its backends: a session that only collects, lists or
    estimates (--collect-only, --setup-plan, --fixtures, --imagetime-dry-run) makes no calls,
    so hosted backends need neither their package nor a key there."""
    if not (options.dry_run or any(getattr(config.option, n, False) for n in _LISTING)):
        return options
    return dataclasses.replace(
        options, judge_options=dataclasses.replace(options.judge_options, calls=False),
        model_options=dataclasses.replace(options.model_options, calls=False))


_PARSED = pytest.StashKey["Options"]()


def parse_options(config: pytest.Config) -> Options:
    """The session's options, parsed once (the ImageTime and TempViz plugins both ask)."""
    if _PARSED not in config.stash:
        config.stash[_PARSED] = _parse(config)
    return config.stash[_PARSED]


def _parse(config: pytest.Config) -> Options:
    raw_models = raw_value(config, "model") or []
    models = tuple(dict.fromkeys(m.strip() for m in raw_models if m.strip()))
    setting = str(raw_value(config, "setting") or "prompt-only")
    if setting not in SETTINGS:
        raise _fail("setting", setting, f"use one of {', '.join(SETTINGS)}")
    out = option_path(config, "out") or config.invocation_params.dir / DEFAULT_OUT
    junit_raw = raw_value(config, "junit")
    junit: Path | None
    if junit_raw is None:
        # One JUnit file by default: with pytest's --junitxml, that one (a CI glob over
        # **/*.xml would count every case twice); --imagetime-junit=PATH asks for both.
        junit = None if config.getoption("xmlpath", None) else out / "junit.xml"
    elif str(junit_raw).lower() == "none":
        junit = None
    else:
        junit = option_path(config, "junit")
    shard = parse_shard(raw_value(config, "shard"))
    return Options(
        models=models,
        judge=str(raw_value(config, "judge") or DEFAULT_JUDGE).strip(),
        out=out,
        setting=setting,
        size=_number(config, "size", int, DEFAULT_SIZE, 64, 8192,
                     "give the sheet size in pixels, an integer from 64 to 8192"),
        seed=_number(config, "seed", int, 0, 0, 2**63 - 1, "give a non-negative integer"),
        pass_threshold=_number(config, "pass-threshold", float, DEFAULT_PASS_THRESHOLD, 0, 10,
                               "give a number from 0 to 10"),
        regenerate=_flag(config, "regenerate"),
        rejudge=_flag(config, "rejudge"),
        junit=junit,
        judge_options=judge_options(config),
        max_cost=_number(config, "max-cost", float, None, 0, float("inf"),
                         "give a number of USD, 0 or more"),
        dry_run=_flag(config, "dry-run"),
        canaries=_flag(config, "canaries"),
        shard=None if shard is None else (shard.k, shard.n),
        shard_source="" if shard is None else shard.source,
        baseline=option_path(config, "baseline"),
        max_drop=_thresholds(config, "max-drop"),
        floors=_thresholds(config, "min"),
        update_baseline=_flag(config, "update-baseline"),
        gate_significant=_flag(config, "gate-significant"),
        allow_judge_change=_flag(config, "allow-judge-change"),
        progress_every_s=_number(config, "progress", float, 30.0, 0, 86400,
                                 "give seconds between progress lines, 0 for none"),
        judge_repeats=_number(config, "judge-repeats", int, 1, 1, 100,
                              "give an integer from 1 to 100"),
        html=option_path(config, "html"),
        model_options=model_options(config),
        reference_dir=_reference_dir(config, setting),
        reference_model=raw_value(config, "reference-model"),
        grid=_grid(config, setting),
        suite=_suite(config),
        judge_batch=_flag(config, "judge-batch"),
        judge_batch_poll_s=_number(config, "judge-batch-poll", float, 30.0, 0.01, 86400,
                                   "give seconds, a number above 0"),
        limit=_number(config, "limit", int, None, 1, 2**31,
                      "give a number of cases, an integer of 1 or more"),
    )


def _suite(config: pytest.Config) -> str:
    suite = str(raw_value(config, "suite") or "imagetime")
    if suite not in SUITES:
        raise _fail("suite", suite, f"use one of {', '.join(SUITES)}")
    return suite


def _reference_dir(config: pytest.Config, setting: str) -> Path | None:
    path = option_path(config, "reference-dir")
    given_model = raw_value(config, "reference-model") is not None
    if path is not None and given_model:
        raise _fail("reference-dir", path, "give either --imagetime-reference-dir or "
                    "--imagetime-reference-model, not both")
    if path is not None and not path.is_dir():
        raise _fail("reference-dir", path, "not a directory")
    if setting == "scaffold" and path is None and not given_model:
        raise _fail("setting", setting, "the scaffold setting needs reference images: "
                    "--imagetime-reference-dir=DIR (DIR/<case id>.png) or "
                    "--imagetime-reference-model=SPEC to draw them")
    return path


def _thresholds(config: pytest.Config, name: str) -> dict[str, float]:
    raw = raw_value(config, name)
    if raw is None:
        return {}
    from ..gate.compare import GateSpecError, parse_thresholds  # only for a gated run

    try:
        return parse_thresholds(str(raw), f"--imagetime-{name}")
    except GateSpecError as exc:
        raise pytest.UsageError(str(exc)) from None
