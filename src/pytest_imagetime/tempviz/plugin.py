"""The pytest entry point of the TempViz suite: its options, and the start of a TempViz run.

With ``--imagetime-suite=tempviz --imagetime-tempviz-data=DIR`` and one or more
``--imagetime-model``, every row of ``DIR/<Category>.csv`` becomes one item per model (see
``session.py``, imported only then).
"""

from __future__ import annotations

import pytest

from ..options import parse_options
from .options import add_tempviz_options


def pytest_addoption(parser: pytest.Parser) -> None:
    add_tempviz_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    options = parse_options(config)
    if options.suite != "tempviz":
        return
    from .session import start

    start(config, options)
