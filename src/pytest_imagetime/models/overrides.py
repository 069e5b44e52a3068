"""``NAME:key=value,...`` model specs: parse the overrides with a message that names the key.

The argument after the backend name may hold a target and overrides, separated by the last
``:`` before a ``key=value`` list: ``diffusers:org/repo:steps=4,guidance=0`` or
``flux-dev:steps=20``. A path or repository id never contains ``=``, so the split is exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Converter = Callable[[str], Any]


class OverrideError(ValueError):
    pass


def split_argument(argument: str | None) -> tuple[str | None, str]:
    """``target[:overrides]`` or ``overrides`` alone -> (target or None, overrides text)."""
    if not argument:
        return None, ""
    head, sep, tail = argument.rpartition(":")
    if sep and "=" in tail and "=" not in head:
        return head or None, tail
    if "=" in argument and ":" not in argument:
        return None, argument
    return argument, ""


def parse_overrides(text: str, accepted: Mapping[str, Converter],
                    where: str) -> dict[str, Any]:
    """``key=value,key=value`` -> converted values; unknown keys and bad values are errors."""
    values: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, raw = part.partition("=")
        key = key.strip().replace("-", "_")
        if not sep:
            raise OverrideError(f"{where}: {part!r} is not key=value")
        if key not in accepted:
            raise OverrideError(f"{where}: unknown override {key!r}; accepted: "
                                f"{', '.join(sorted(accepted))}")
        if key in values:
            raise OverrideError(f"{where}: {key!r} is given twice")
        try:
            values[key] = accepted[key](raw.strip())
        except (TypeError, ValueError) as exc:
            raise OverrideError(f"{where}: {key}={raw.strip()!r}: {exc}") from None
    return values


def whole_number(raw: str, accepted: str) -> int:
    """``raw`` as an int; anything else is refused with ``accepted``, the form the key takes."""
    try:
        return int(raw)
    except ValueError:
        raise ValueError(accepted) from None


def positive_int(raw: str) -> int:
    value = whole_number(raw, "give a positive integer")
    if value < 1:
        raise ValueError("give a positive integer")
    return value


def non_negative_float(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("give a number >= 0") from None
    if not value >= 0:
        raise ValueError("give a number >= 0")
    return value


def boolean(raw: str) -> bool:
    lowered = raw.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError("give true or false")


def choice(*allowed: str) -> Converter:
    def convert(raw: str) -> str:
        if raw not in allowed:
            raise ValueError(f"use one of {', '.join(allowed)}")
        return raw
    return convert
