"""Model spec overrides: the target/overrides split and messages that name the key."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.models.overrides import (
    OverrideError,
    boolean,
    choice,
    non_negative_float,
    parse_overrides,
    positive_int,
    split_argument,
)

ACCEPTED = {"steps": positive_int, "guidance": non_negative_float, "offload": boolean,
            "dtype": choice("auto", "float16")}


@pytest.mark.parametrize(("argument", "split"), [
    (None, (None, "")), ("", (None, "")),
    ("org/repo", ("org/repo", "")),
    ("steps=4", (None, "steps=4")),
    ("org/repo:steps=4,guidance=0", ("org/repo", "steps=4,guidance=0")),
    ("C:/weights/model:steps=4", ("C:/weights/model", "steps=4")),
    ("/a/b:c", ("/a/b:c", "")),
    (":steps=4", (None, "steps=4")),
])
def test_split_argument(argument: str | None, split: tuple[str | None, str]) -> None:
    assert split_argument(argument) == split


target_parts = st.text(st.sampled_from("abcxyz/._-"), min_size=1, max_size=12)


@given(target_parts, st.lists(st.tuples(st.sampled_from(["steps", "size"]),
                                        st.integers(0, 99)), min_size=1, max_size=3))
def test_a_target_and_its_overrides_come_apart_exactly(target: str,
                                                       pairs: list[tuple[str, int]]) -> None:
    overrides = ",".join(f"{k}={v}" for k, v in pairs)
    assert split_argument(f"{target}:{overrides}") == (target, overrides)


def test_overrides_are_converted_and_dashes_read_as_underscores() -> None:
    accepted: dict[str, Any] = {**ACCEPTED, "max_sequence_length": positive_int}
    values = parse_overrides(" steps=4 , guidance=0.5,offload=YES,dtype=float16,"
                             "max-sequence-length=77,", accepted, "flux-dev")
    assert values == {"steps": 4, "guidance": 0.5, "offload": True, "dtype": "float16",
                      "max_sequence_length": 77}
    assert parse_overrides("", accepted, "x") == {}


@pytest.mark.parametrize(("text", "message"), [
    ("steps", "flux-dev: 'steps' is not key=value"),
    ("seed=3", "flux-dev: unknown override 'seed'; accepted: dtype, guidance, offload, steps"),
    ("steps=2,steps=3", "flux-dev: 'steps' is given twice"),
    ("steps=0", "flux-dev: steps='0': give a positive integer"),
    ("steps=four", "flux-dev: steps='four': give a positive integer"),
    ("steps=2.5", "flux-dev: steps='2.5': give a positive integer"),
    ("guidance=high", "flux-dev: guidance='high': give a number >= 0"),
    ("guidance=-1", "flux-dev: guidance='-1': give a number >= 0"),
    ("guidance=nan", "flux-dev: guidance='nan': give a number >= 0"),
    ("offload=maybe", "flux-dev: offload='maybe': give true or false"),
    ("dtype=int8", "flux-dev: dtype='int8': use one of auto, float16"),
])
def test_a_bad_override_names_its_key_and_value(text: str, message: str) -> None:
    with pytest.raises(OverrideError) as raised:
        parse_overrides(text, ACCEPTED, "flux-dev")
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("true", True), ("On", True),
                                            ("0", False), ("FALSE", False), ("no", False)])
def test_boolean_words(raw: str, value: bool) -> None:
    assert boolean(raw) is value


@given(st.integers(1, 10**6))
def test_positive_ints_round_trip(value: int) -> None:
    assert positive_int(str(value)) == value
