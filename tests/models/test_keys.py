"""The key of a hosted backend: which variable, and how a missing one is worded for a run of
one hosted backend or of several."""

from __future__ import annotations

import pickle

import pytest

from pytest_imagetime.models.base import ModelOptions
from pytest_imagetime.models.keys import MissingKey, key_env_named, key_env_of, read_key


def test_a_missing_key_names_its_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARK_API_KEY", raising=False)
    with pytest.raises(MissingKey) as info:
        read_key("ARK_API_KEY", "the seedream model")
    assert isinstance(info.value, ValueError)
    assert str(info.value) == (
        "the seedream model needs an API key in the environment variable ARK_API_KEY (or "
        "--imagetime-model-key-env=NAME for another variable, 'none' for a server without "
        "keys)")
    assert info.value.worded(several=False) == str(info.value)


def test_in_a_run_of_several_it_does_not_suggest_the_shared_option() -> None:
    own = MissingKey("the gemini-image model", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), False)
    assert own.worded(several=True) == (
        "the gemini-image model needs an API key in the environment variable GEMINI_API_KEY "
        "or GOOGLE_API_KEY (export it: each hosted backend of this run reads its own variable)")
    named = MissingKey("the bfl model", ("MY_KEY",), True)
    assert named.worded(several=True).endswith(
        "(--imagetime-model-key-env names that one variable for every hosted backend of this "
        "run: leave it out and export each backend's own key variable)")


def test_it_survives_pickling() -> None:
    error = MissingKey("the bfl model", ("BFL_API_KEY",), False)
    copy = pickle.loads(pickle.dumps(error))
    assert isinstance(copy, MissingKey) and str(copy) == str(error) and not copy.named


def test_the_variable_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    assert key_env_of(ModelOptions(), "GEMINI_API_KEY", "GOOGLE_API_KEY") == "GOOGLE_API_KEY"
    monkeypatch.delenv("GOOGLE_API_KEY")
    assert key_env_of(ModelOptions(), "GEMINI_API_KEY", "GOOGLE_API_KEY") == "GEMINI_API_KEY"
    named = ModelOptions(key_env="MY_KEY")
    assert key_env_named(named) and not key_env_named(ModelOptions())
    assert key_env_of(named, "GEMINI_API_KEY") == "MY_KEY"
    assert key_env_of(ModelOptions(key_env=None), "BFL_API_KEY") is None
    assert read_key(None, "the bfl model") is None
