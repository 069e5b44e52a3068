"""Command-line and ini options, parsed once into a typed, validated ``Options``.

Every option is ``--imagetime-*`` on the command line and ``imagetime_*`` in the ini file
(pytest.ini, tox.ini, setup.cfg or ``[tool.pytest.ini_options]``); the command line wins.
Bad values stop the run at start-up with a message that names the option, echoes the value
and says what is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .rubric import SETTINGS, Setting

DEFAULT_JUDGE = "pixel"
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

    @property
    def active(self) -> bool:
        return bool(self.models)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("imagetime", "ImageTime benchmark")

    def option(name: str, help: str, ini_type: Any = "string", **kwargs: Any) -> None:
        dest = "imagetime_" + name.replace("-", "_")
        group.addoption(f"--imagetime-{name}", dest=dest, help=help, **kwargs)
        parser.addini(dest, help=help, type=ini_type, default=None)

    option("model", "Image model to benchmark, as NAME or NAME:ARG (procedural, "
           "procedural:copied, files:DIR, ...); repeat for several. Without it the plugin "
           "collects nothing.", ini_type="args", action="append", default=None)
    option("judge", f"Judge that scores the sheets (default: {DEFAULT_JUDGE}).")
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
    option("junit", "Where the plugin writes its own JUnit XML (default: OUT/junit.xml; "
           "'none' writes none). pytest's --junitxml works as well.")


def _raw(config: pytest.Config, name: str) -> Any:
    dest = "imagetime_" + name.replace("-", "_")
    value = config.getoption(dest)
    if value is None or value == []:
        value = config.getini(dest)
    return value if value not in ("", [], None) else None


def _fail(name: str, value: object, accepted: str) -> pytest.UsageError:
    return pytest.UsageError(f"--imagetime-{name}={value}: {accepted}")


def _number(config: pytest.Config, name: str, kind: type, default: Any,
            low: float, high: float, accepted: str) -> Any:
    value = _raw(config, name)
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
    return bool(_raw(config, name))


def parse_options(config: pytest.Config) -> Options:
    raw_models = _raw(config, "model") or []
    models = tuple(dict.fromkeys(m.strip() for m in raw_models if m.strip()))
    setting = str(_raw(config, "setting") or "prompt-only")
    if setting not in SETTINGS:
        raise _fail("setting", setting, f"use one of {', '.join(SETTINGS)}")
    out = Path(str(_raw(config, "out") or DEFAULT_OUT)).expanduser()
    if not out.is_absolute():
        out = config.invocation_params.dir / out
    junit_raw = _raw(config, "junit")
    junit: Path | None
    if junit_raw is None:
        junit = out / "junit.xml"
    elif str(junit_raw).lower() == "none":
        junit = None
    else:
        junit = Path(str(junit_raw)).expanduser()
        if not junit.is_absolute():
            junit = config.invocation_params.dir / junit
    return Options(
        models=models,
        judge=str(_raw(config, "judge") or DEFAULT_JUDGE).strip(),
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
    )
