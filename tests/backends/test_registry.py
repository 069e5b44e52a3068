"""The registry's install hints: one helper names the extra and prints its pip install."""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import pytest

from pytest_imagetime.backends.openai_client import load_sdk
from pytest_imagetime.backends.registry import (
    EXTRAS,
    import_extra,
    install_hint,
    missing_extra,
    require_extra,
)


class _Refuse(importlib.abc.MetaPathFinder):
    """As if a package were not installed: its finder refuses it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> None:
        if fullname == self.name or fullname.startswith(self.name + "."):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return


def test_the_install_hint_is_the_exact_command() -> None:
    assert install_hint("diffusers") == "pip install 'pytest-imagetime[diffusers]'"
    assert install_hint("openai") == "pip install 'pytest-imagetime[openai]'"


# Imported packages whose distribution has another name.
DISTRIBUTIONS = {"google.genai": "google-genai"}


def test_the_extras_are_those_of_pyproject() -> None:
    lines = (Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    for extra, needed in EXTRAS.items():
        declared = next(line for line in lines if line.startswith(f"{extra} = ["))
        assert all(f'"{DISTRIBUTIONS.get(package, package)}' in declared
                   for package in needed.packages), extra


def test_a_missing_package_names_itself_and_the_command(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "diffusers", None)
    with pytest.raises(ImportError) as raised:
        require_extra("diffusers", "the diffusers backend")
    assert str(raised.value) == ("the diffusers backend needs diffusers: "
                                 "pip install 'pytest-imagetime[diffusers]'")


def test_an_extra_may_name_itself_and_an_alternative(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "meta_path", [_Refuse("openai"), *sys.meta_path])
    monkeypatch.delitem(sys.modules, "openai", raising=False)
    expected = ("the vlm judge needs the openai package: pip install "
                "'pytest-imagetime[openai]'; to score offline use --imagetime-judge=pixel")
    with pytest.raises(ImportError) as raised:
        require_extra("openai", "the vlm judge", "to score offline use --imagetime-judge=pixel")
    assert str(raised.value) == expected
    with pytest.raises(ImportError) as loaded:
        load_sdk("the vlm judge", "to score offline use --imagetime-judge=pixel")
    assert str(loaded.value) == expected


def test_present_packages_pass_and_import() -> None:
    require_extra("openai", "the vlm judge")  # the test environment has every extra
    assert import_extra("openai", "json", "anyone").__name__ == "json"
    error = missing_extra("diffusers", "the diffusers backend", ["torch", "transformers"])
    assert str(error).startswith("the diffusers backend needs torch, transformers: pip install")
