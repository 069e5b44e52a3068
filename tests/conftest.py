from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

# The plugin imports its session only when a run asks for a model, and numpy only when a sheet
# is drawn or measured. An in-process pytester run drops the modules it imported when it ends,
# and numpy's core cannot be imported twice in one process: so they are imported here, once.
import pytest_imagetime.plugin.start
import pytest_imagetime.plugin.tempviz_session
import pytest_imagetime.sheet.metrics  # noqa: F401
from pytest_imagetime.cases.model import Case
from tests.builders import make_case

# Parsed case files are kept in a folder of this test session (and of the pytest processes its
# tests start), not in the user's cache.
_CACHE = tempfile.mkdtemp(prefix="imagetime-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ["IMAGETIME_CACHE_DIR"] = _CACHE


# Opt-in markers: the option that runs them, and what they need.
OPT_IN = {"gpu": ("--run-gpu", "on a CUDA device"),
          "slurm": ("--run-slurm", "against a running Slurm (examples/shards/slurm-localhost.sh)"),
          "network": ("--run-network", "with PyPI reachable")}


def pytest_addoption(parser: pytest.Parser) -> None:
    for marker, (option, needs) in OPT_IN.items():
        parser.addoption(option, action="store_true", default=False,
                         help=f"also run the tests marked {marker} ({needs})")


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"{marker} tests: deselected ({option} runs them {needs})"
            for marker, (option, needs) in OPT_IN.items() if not config.getoption(option)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """GPU, Slurm and network tests are opt-in: without their option they are deselected (and
    counted as such), never skipped in silence; with it, a missing GPU, Slurm or network fails
    them."""
    for marker, (option, _) in OPT_IN.items():
        if config.getoption(option):
            continue
        opted = [item for item in items if item.get_closest_marker(marker)]
        if opted:
            config.hook.pytest_deselected(items=opted)
            items[:] = [item for item in items if not item.get_closest_marker(marker)]


@pytest.fixture
def case() -> Case:
    return make_case()
