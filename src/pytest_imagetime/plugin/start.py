"""The start of a benchmark run: the one place that imports the heavy rooms (backends, cases,
the store) when a run asks for a model. ``plugin/__init__.py`` imports this module only then,
so that a test session that does not use the benchmark never pays for them.

Every check that can fail before the first item (outputs writable, backends resolvable,
folders free, baselines readable) runs here; then the session state is kept in
``config.stash[state_key]`` and the run's hooks are registered: collection and running in
every process, the reporter only on the controller.
"""

from __future__ import annotations

import pytest

from ..cases.inventory import domains, slug
from ..cases.loading import builtin_cases_dir
from ..rubric.facts import LEVEL_KEYS
from ..store.writable import UnwritablePath, check_run_outputs
from .collect import CaseCollection, packaged_argument
from .options import Options, for_session
from .reporter import ImagetimeReporter, OneLineItemErrors
from .running import ItemRunning
from .scheduling import XdistHooks
from .state import ImagetimeState, is_xdist_worker, state_key


def start(config: pytest.Config, options: Options) -> None:
    """Set up the session of a run that asks for a model (``options.active``)."""
    if options.dry_run:
        # A dry run only counts: no workers to start (before xdist's own configure runs).
        config.option.dist = "no"
        config.option.numprocesses = None
    options = for_session(config, options)
    register_markers(config)
    if not is_xdist_worker(config):
        _check_outputs(config, options)
    state = ImagetimeState(config, options)
    if not is_xdist_worker(config) and not options.dry_run and not config.option.collectonly:
        state.claim_folders()
    config.stash[state_key] = state
    config.pluginmanager.register(CaseCollection(state), "imagetime-collection")
    if not is_xdist_worker(config):  # reports are the controller's, as pytest's LogXML
        reporter = ImagetimeReporter(state)
        config.pluginmanager.register(reporter, "imagetime-reporter")
        config.pluginmanager.register(OneLineItemErrors(reporter), "imagetime-item-errors")
    # After the reporter: its session end (closing the pipeline) then comes first.
    config.pluginmanager.register(ItemRunning(state), "imagetime-running")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(), "imagetime-xdist")
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # No paths given: a benchmark run collects the packaged cases and nothing else.
        config.args = [str(builtin_cases_dir())]
    else:
        config.args = [packaged_argument(arg, config.invocation_params.dir)
                       for arg in config.args]


def _check_outputs(config: pytest.Config, options: Options) -> None:
    """Refuse output paths that cannot be written before any item runs (a session that
    writes nothing, collecting only or a dry run, is let be)."""
    if options.dry_run or config.option.collectonly:
        return
    try:
        check_run_outputs(options.out, options.junit, options.html,
                          getattr(config.option, "xmlpath", None))
    except UnwritablePath as exc:
        raise pytest.UsageError(str(exc)) from None


def register_markers(config: pytest.Config) -> None:
    lines = ["imagetime: an ImageTime benchmark item"]
    lines += [f"imagetime_{k}: ImageTime items probing capability level {k}" for k in LEVEL_KEYS]
    lines += [f"imagetime_{d}: ImageTime items of difficulty {d}"
              for d in ("easy", "medium", "hard")]
    lines += [f"imagetime_domain_{slug(d)}: ImageTime items of domain {d}" for d in domains()]
    lines += [f"imagetime_{flag}: ImageTime items with the {flag} applicability flag"
              for flag in ("constraint", "quantity", "occlusion")]
    for line in lines:
        config.addinivalue_line("markers", line)
