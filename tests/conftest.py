from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

# The plugin imports its session only when a run asks for a model, and numpy only when a sheet
# is drawn or measured. An in-process pytester run drops the modules it imported when it ends,
# and numpy's core cannot be imported twice in one process: so they are imported here, once.
import pytest_imagetime.session
import pytest_imagetime.sheet.metrics
import pytest_imagetime.tempviz.session  # noqa: F401
from pytest_imagetime.cases import Case
from tests.builders import make_case

# Parsed case files are kept in a folder of this test session (and of the pytest processes its
# tests start), not in the user's cache.
_CACHE = tempfile.mkdtemp(prefix="imagetime-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ["IMAGETIME_CACHE_DIR"] = _CACHE


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-gpu", action="store_true", default=False,
                     help="also run the tests marked gpu (they need a CUDA device)")


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.getoption("--run-gpu"):
        return None
    return "gpu tests: deselected (--run-gpu runs them on a CUDA device)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """GPU tests are opt-in: without --run-gpu they are deselected (and counted as such),
    never skipped in silence; with it, a missing GPU fails them."""
    if config.getoption("--run-gpu"):
        return
    gpu = [item for item in items if item.get_closest_marker("gpu")]
    if gpu:
        config.hook.pytest_deselected(items=gpu)
        items[:] = [item for item in items if not item.get_closest_marker("gpu")]


@pytest.fixture
def case() -> Case:
    return make_case()
