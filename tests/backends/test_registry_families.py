"""The registry's family names: a short name stands for a registered one."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_imagetime.backends.registry import Registry, UnknownBackend

FAMILIES = {"short": "long", "shadowed": "long"}


class Named:
    def __init__(self, argument: str | None = None, *, name: str = "") -> None:
        self.argument, self.registered = argument, name


TARGET = f"{__name__}:Named"


def as_created(backend: Any, name: str) -> Any:
    """The adapter: these stand-ins need no optional features."""
    return backend


def registry() -> Registry:
    return Registry("model", "imagetime.no-such-group",
                    {"long": TARGET, "shadowed": TARGET}, f"{__name__}:as_created",
                    families=f"{__name__}:FAMILIES")


def test_a_family_name_builds_the_backend_it_stands_for() -> None:
    built: Any = registry().create("short:x=1")
    assert (built.registered, built.argument) == ("long", "x=1")


def test_a_registered_name_wins_over_a_family_name() -> None:
    assert registry().resolve("shadowed") == "shadowed"
    assert registry().resolve("other") == "other"


def test_unknown_names_list_the_family_names_too() -> None:
    with pytest.raises(UnknownBackend, match=r"available: long, shadowed, short"):
        registry().create("nope")
