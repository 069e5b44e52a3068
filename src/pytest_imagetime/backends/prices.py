"""Judge prices: a shipped table the user can override, and the cost of one call.

A model's price has standard rates (input, cached input, output) and Batch API rates. A
table entry is ``[input, output]``, or an object with ``input``, ``output`` and optionally
``cached_input`` and ``batch`` (an object of the same three rates); what an entry leaves out
follows the provider's rules: cached input costs the input rate, the Batch API half of each.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

BATCH_DISCOUNT = 0.5  # the Batch API's rates are half the standard ones


class PriceError(ValueError):
    pass


@dataclass(frozen=True)
class Rates:
    """USD per 1M tokens."""

    input: float
    cached_input: float
    output: float

    def cost(self, tokens_in: int, tokens_out: int, tokens_cached: int = 0) -> float:
        """``tokens_cached`` are the part of ``tokens_in`` the provider read from its cache."""
        cached = min(max(tokens_cached, 0), tokens_in)
        return ((tokens_in - cached) * self.input + cached * self.cached_input
                + tokens_out * self.output) / 1_000_000


@dataclass(frozen=True)
class Price:
    """A model's standard rates and its Batch API rates."""

    standard: Rates
    batch: Rates

    @classmethod
    def of(cls, input_usd: float, output_usd: float, cached_input_usd: float | None = None,
           batch: Rates | None = None) -> Price:
        cached = input_usd if cached_input_usd is None else cached_input_usd
        standard = Rates(input_usd, cached, output_usd)
        return cls(standard, batch or Rates(input_usd * BATCH_DISCOUNT, cached * BATCH_DISCOUNT,
                                            output_usd * BATCH_DISCOUNT))

    def per_mtok(self) -> list[float]:
        """``[input, output]`` of the standard rates, as judge configurations record them."""
        return [self.standard.input, self.standard.output]

    def rates(self, batch: bool = False) -> Rates:
        return self.batch if batch else self.standard


def parse_rates(text: str) -> tuple[float, ...]:
    """A price as typed on a command line: ``IN,OUT`` or ``IN,OUT,CACHED`` USD per 1M tokens;
    PriceError says what is accepted."""
    try:
        rates = tuple(float(v) for v in text.split(","))
    except ValueError:
        rates = ()
    if len(rates) not in (2, 3) or not all(math.isfinite(rate) for rate in rates):
        raise PriceError("give IN,OUT or IN,OUT,CACHED in USD per 1M tokens, e.g. 5,30,0.5")
    if any(rate < 0 for rate in rates):
        raise PriceError("prices cannot be negative")
    return rates


def parse_usd(text: str, *, zero: bool = True) -> float:
    """An amount of USD as typed on a command line, 0 allowed only where ``zero``;
    PriceError says what is accepted."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise PriceError("give USD, a number of 0 or more" if zero
                         else "give USD, a number above 0, e.g. 2.50")
    return value


def _rate(value: object, where: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise PriceError(f"{where}: {name} must be a number of USD per 1M tokens, 0 or more; "
                         f"got {value!r}")
    return float(value)


def _rates(entry: Mapping[str, Any], where: str) -> tuple[float, float, float | None]:
    unknown = sorted(set(entry) - {"input", "cached_input", "output", "batch"})
    if unknown:
        raise PriceError(f"{where}: unknown fields {unknown}; a price has input, output, "
                         f"cached_input and batch")
    for required in ("input", "output"):
        if required not in entry:
            raise PriceError(f"{where}: {required} is missing")
    cached = entry.get("cached_input")
    return (_rate(entry["input"], where, "input"), _rate(entry["output"], where, "output"),
            None if cached is None else _rate(cached, where, "cached_input"))


def parse_price(entry: object, where: str) -> Price:
    """One table entry: ``[input, output]`` or ``{"input", "output", "cached_input",
    "batch": {...}}``."""
    if isinstance(entry, list):
        if len(entry) != 2:
            raise PriceError(f"{where}: expected [input, output], got {entry!r}")
        return Price.of(_rate(entry[0], where, "input"), _rate(entry[1], where, "output"))
    if not isinstance(entry, Mapping):
        raise PriceError(f"{where}: expected [input, output] or an object with input, output, "
                         f"cached_input and batch; got {entry!r}")
    input_usd, output_usd, cached = _rates(entry, where)
    batch_entry = entry.get("batch")
    batch = None
    if batch_entry is not None:
        if not isinstance(batch_entry, Mapping) or "batch" in batch_entry:
            raise PriceError(f"{where}: batch must be an object with input, output and "
                             f"cached_input")
        b_in, b_out, b_cached = _rates(batch_entry, f"{where}.batch")
        batch = Rates(b_in, b_in if b_cached is None else b_cached, b_out)
    return Price.of(input_usd, output_usd, cached, batch)


def _table(text: str, where: str) -> dict[str, Price]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise PriceError(f"{where}: not JSON ({exc})") from None
    prices = data.get("prices", data) if isinstance(data, dict) else None
    if not isinstance(prices, dict):
        raise PriceError(f"{where}: not a price table; expected "
                         '{"prices": {"model": [input_usd_per_mtok, output_usd_per_mtok]}} or '
                         '{"prices": {"model": {"input": ..., "cached_input": ..., '
                         '"output": ...}}}')
    return {str(k): parse_price(v, f"{where}: {k}") for k, v in prices.items()}


def shipped_table() -> dict[str, Price]:
    return _table(resources.files("pytest_imagetime").joinpath("data/judge_prices.json")
                  .read_text(encoding="utf-8"), "judge_prices.json")


def price_for(model: str, override: Price | tuple[float, ...] | None = None,
              prices_file: Path | None = None) -> Price | None:
    """The price of ``model``: an explicit override, then the user's file, then the shipped
    table (the longest model-name prefix wins, so dated snapshots find their family)."""
    if isinstance(override, Price):
        return override
    if override is not None:  # (input, output[, cached input])
        return Price.of(override[0], override[1], override[2] if len(override) > 2 else None)
    table = shipped_table()
    if prices_file is not None:
        try:
            text = prices_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise PriceError(f"{prices_file}: {exc}") from None
        table.update(_table(text, str(prices_file)))
    if model in table:
        return table[model]
    prefixes = [k for k in table if model.startswith(k + "-")]
    return table[max(prefixes, key=len)] if prefixes else None


def cost_usd(price: Price | None, tokens_in: int, tokens_out: int) -> float:
    """Standard-rate cost without cached tokens; 0 without a price (callers that must tell
    an unknown cost apart use ``known_cost``)."""
    if price is None:
        return 0.0
    return price.standard.cost(tokens_in, tokens_out)


def known_cost(price: Price | None, tokens_in: int, tokens_out: int, tokens_cached: int = 0,
               batch: bool = False) -> float | None:
    """The cost of a call, cached input at its rate; None when the price is unknown."""
    if price is None:
        return None
    return price.rates(batch).cost(tokens_in, tokens_out, tokens_cached)


def sum_costs(costs: Iterable[float | None]) -> float | None:
    """The total of several costs; unknown when any of them is."""
    total: list[float] = []
    for cost in costs:
        if cost is None:
            return None
        total.append(cost)
    return math.fsum(total)
