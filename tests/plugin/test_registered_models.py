"""``plugin/registered_models.py``: the names a conftest.py registers, checked once per
session and kept in the config's stash."""

from __future__ import annotations

import sys

import pytest

from pytest_imagetime.backends.registry import MODELS
from pytest_imagetime.plugin.registered_models import session_models


def _conftest(pytester: pytest.Pytester, body: str) -> None:
    pytester.makeconftest("class Tiny:\n    pass\n\n"
                          "def pytest_imagetime_register_models(register):\n" + body)


def test_without_registrations_the_builtin_names_remain(pytester: pytest.Pytester) -> None:
    registry = session_models(pytester.parseconfig())
    assert registry.added == {}
    assert registry.builtins == MODELS.builtins


def test_a_registered_name_resolves_to_its_factory(pytester: pytest.Pytester) -> None:
    _conftest(pytester, "    register(' tiny ', Tiny)\n")
    registry = session_models(pytester.parseconfig())
    assert registry.factory("tiny").__name__ == "Tiny"
    assert "tiny" not in MODELS.added


def test_the_hook_is_asked_once_per_session(pytester: pytest.Pytester) -> None:
    _conftest(pytester, "    global ASKED\n    ASKED = globals().get('ASKED', 0) + 1\n"
                        "    register('tiny', Tiny)\n")
    config = pytester.parseconfig()
    first = session_models(config)
    assert session_models(config) is first
    conftest = next(m for m in sys.modules.values()
                    if getattr(m, "__file__", None) == str(pytester.path / "conftest.py"))
    assert conftest.ASKED == 1


def test_the_rootdir_joins_the_import_path(pytester: pytest.Pytester,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(pytester.path)])
    config = pytester.parseconfig()
    session_models(config)
    assert str(config.rootpath) in sys.path


@pytest.mark.parametrize(("call", "message"), [
    ("register('', Tiny)", "a name is a non-empty string without ':'"),
    ("register('a:b', Tiny)", "a name is a non-empty string without ':'"),
    ("register(3, Tiny)", "a name is a non-empty string without ':'"),
    ("register('tiny', 'Tiny')", "the factory is a class or a function"),
    ("register('tiny', Tiny); register('tiny ', lambda a: a)", "'tiny' is registered twice"),
    ("register('procedural', Tiny)", "procedural: a built-in model has this name"),
    ("register('python', Tiny)", "python: a built-in model has this name"),
])
def test_a_bad_registration_is_a_usage_error(pytester: pytest.Pytester, call: str,
                                             message: str) -> None:
    _conftest(pytester, f"    {call}\n")
    config = pytester.parseconfig()
    with pytest.raises(pytest.UsageError, match="pytest_imagetime_register_models") as raised:
        session_models(config)
    assert message in str(raised.value)


def test_the_same_factory_twice_is_one_registration(pytester: pytest.Pytester) -> None:
    _conftest(pytester, "    register('tiny', Tiny)\n    register('tiny', Tiny)\n")
    assert set(session_models(pytester.parseconfig()).added) == {"tiny"}
