"""The pytest entry point: options, hook specifications, and the start of a benchmark run.

With ``--imagetime-model`` (or ``imagetime_model`` in the ini file) every case becomes one
item per model (see ``collect.py``). Without it the plugin collects nothing, so a
repository's own tests run as usual, and they pay only for this module and the options: the
run's start (``start.py``), the backends, numpy and the reports are imported when a run asks
for a model.
"""

from __future__ import annotations

import pytest

from . import hookspec
from .options import add_options, parse_options, registered


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspec)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    if config.option.help:  # the options are listed whatever the ini file holds
        return
    options = parse_options(config)  # checked even when unused: a bad value is still a typo
    if getattr(config.option, "markers", False):  # --markers lists ours and runs nothing
        from .start import register_markers  # the markers name the packaged domains

        register_markers(config)
        return
    if options.suite == "tempviz" and not registered(config, "imagetime_tempviz_data"):
        raise pytest.UsageError("--imagetime-suite=tempviz: the TempViz plugin is disabled "
                                "(-p no:imagetime-tempviz); leave that out to run the suite")
    if not options.active:
        return
    from .start import start  # the boundary: the heavy rooms load when a run asks for them

    start(config, options)
