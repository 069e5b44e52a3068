"""Commands that rerun a run's items alone, and node ids as pytest prints them."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

from .options import raw_value

# The options that decide what a case's rerun draws, judges and asserts.
RERUN_OPTIONS = ("judge", "setting", "grid", "size", "seed", "pass-threshold", "out",
                 "judge-model", "judge-base-url", "judge-key-env", "judge-repeats",
                 "reference-dir", "reference-model", "model-base-url", "model-key-env")


def rerun_command(config: pytest.Config, selection: Sequence[str],
                  specs: Iterable[str]) -> str:
    """``pytest`` with ``selection`` (node ids, or ``--lf``), the models and the options
    that decide what a rerun draws, judges and asserts."""
    words = ["pytest", *selection, *(f"--imagetime-model={spec}" for spec in specs)]
    for name in RERUN_OPTIONS:
        value = raw_value(config, name)
        if value is not None:
            words.append(f"--imagetime-{name}={value}")
    return shlex.join(words)


def cwd_relative(config: pytest.Config, nodeid: str) -> str:
    """The node id as pytest prints it: its file relative to the working directory."""
    path, sep, rest = nodeid.partition("::")
    if config.invocation_params.dir == config.rootpath or not path:
        return nodeid
    relative = os.path.relpath(config.rootpath / path, config.invocation_params.dir)
    return f"{Path(relative).as_posix()}{sep}{rest}"
