"""Hooks that pytest-imagetime calls; implement them in a conftest.py or a plugin."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..cases.model import Case
    from ..engine.runner import ItemOutcome


@pytest.hookspec()
def pytest_imagetime_item_conditions(case: Case, outcome: ItemOutcome,
                                     config: pytest.Config) -> list[str] | None:
    """Extra benchmark conditions for one item, called on the process that runs it.

    :param case: the case of the item.
    :param outcome: the item's record (post-cap scores, labels, caps), judgment and caps.
    :param config: the pytest config.
    :returns: one line per unmet condition (they fail the item), or None / [] when all hold.
    """
    return None


@pytest.hookspec()
def pytest_imagetime_update_report(report: dict[str, Any], config: pytest.Config) -> None:
    """Change or extend one run's aggregate JSON report before it is written.

    Called on the controller (never on xdist workers) once per run (model x judge x setting).
    Keep the report valid against ``schemas/report.schema.json``: add keys under ``"extra"``.

    :param report: the report, as a mutable dict.
    :param config: the pytest config.
    """


@pytest.hookspec()
def pytest_imagetime_register_models(register: Callable[[str, Callable[..., Any]], None]
                                     ) -> None:
    """Add model names that ``--imagetime-model=NAME[:ARGUMENT]`` can use, without packaging.

    Called once per pytest process when a run asks for a model, before any backend is built:
    on the controller and on each xdist worker, so every process must register the same
    names (a conftest.py does). A built-in name cannot be taken.

    :param register: call ``register(name, factory)`` once per name; ``factory`` is a class
        or function called as ``factory(argument, **context)`` like an entry point's, with
        ``argument`` the text after ``NAME:`` (or None) and ``options=`` / ``name=`` when it
        takes them.
    """
