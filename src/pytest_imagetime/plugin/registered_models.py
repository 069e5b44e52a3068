"""The model registry of one session: the built-in and installed backends plus the names that
conftest.py files and plugins add through ``pytest_imagetime_register_models``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import pytest

from ..backends.registry import MODELS, Registry

_registry_key = pytest.StashKey[Registry]()


def session_models(config: pytest.Config) -> Registry:
    """The models this session can name, asked of the hook once per process (the controller
    and each xdist worker ask their own conftest.py files, so all resolve the same names)."""
    if _registry_key in config.stash:
        return config.stash[_registry_key]
    added: dict[str, Callable[..., Any]] = {}

    def register(name: str, factory: Callable[..., Any]) -> None:
        shown = f"pytest_imagetime_register_models: register({name!r}, {factory!r})"
        if not isinstance(name, str) or not name.strip() or ":" in name:
            raise pytest.UsageError(f"{shown}: a name is a non-empty string without ':' "
                                    "(a spec's ':' starts its argument)")
        if not callable(factory):
            raise pytest.UsageError(f"{shown}: the factory is a class or a function taking "
                                    "the spec's argument (or None)")
        if added.get(name.strip(), factory) is not factory:
            raise pytest.UsageError(f"{shown}: {name.strip()!r} is registered twice")
        added[name.strip()] = factory

    config.hook.pytest_imagetime_register_models(register=register)
    try:
        registry = MODELS.with_added(added)
    except ValueError as exc:
        raise pytest.UsageError(f"pytest_imagetime_register_models: {exc}") from None
    # A python: spec names a module under the rootdir, as a conftest.py beside it imports.
    if str(config.rootpath) not in sys.path:
        sys.path.append(str(config.rootpath))
    config.stash[_registry_key] = registry
    return registry
