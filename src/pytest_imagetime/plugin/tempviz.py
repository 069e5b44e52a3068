"""The pytest entry point of the TempViz suite: its options, and the start of a TempViz run.

With ``--imagetime-suite=tempviz --imagetime-tempviz-data=DIR`` and one or more
``--imagetime-model``, every row of ``DIR/<Category>.csv`` becomes one item per model (see
``tempviz_session.py``, imported only then). Its items run on the engine the ImageTime suite runs
on (``engine/pipeline.py``, through ``runner.TempvizSuite``).
"""

from __future__ import annotations

import pytest

from .options import parse_options, registered
from .tempviz_options import TEMPVIZ_OPTIONS, add_tempviz_options


def pytest_addoption(parser: pytest.Parser) -> None:
    add_tempviz_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if not registered(config, "imagetime_model"):
        # -p no:imagetime: the suite is chosen and run through the imagetime plugin's options
        for name in TEMPVIZ_OPTIONS:
            if config.getoption("imagetime_" + name.replace("-", "_")) is not None:
                raise pytest.UsageError(f"--imagetime-{name}: the TempViz suite runs through "
                                        "the imagetime plugin, which -p no:imagetime "
                                        "disabled")
        return
    if config.option.help:  # the options are listed whatever the ini file holds
        return
    options = parse_options(config)
    if getattr(config.option, "markers", False):  # --markers lists ours and runs nothing
        from .tempviz_session import register_markers

        register_markers(config)
        return
    if options.suite != "tempviz":
        return
    from .tempviz_session import start

    start(config, options)
