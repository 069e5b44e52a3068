"""Judge prices: a shipped table the user can override, and the cost of one call."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

Price = tuple[float, float]  # USD per 1M input tokens, per 1M output tokens


class PriceError(ValueError):
    pass


def _table(text: str, where: str) -> dict[str, Price]:
    try:
        data = json.loads(text)
        prices = data.get("prices", data) if isinstance(data, dict) else None
        if not isinstance(prices, dict):
            raise ValueError("expected an object of model: [input, output]")
        return {str(k): (float(v[0]), float(v[1])) for k, v in prices.items()}
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise PriceError(f"{where}: not a price table ({exc}); expected "
                         '{"prices": {"model": [input_usd_per_mtok, output_usd_per_mtok]}}'
                         ) from None


def price_for(model: str, override: Price | None = None,
              prices_file: Path | None = None) -> Price | None:
    """The price of ``model``: an explicit override, then the user's file, then the shipped
    table (the longest model-name prefix wins, so dated snapshots find their family)."""
    if override is not None:
        return override
    table = _table(resources.files("pytest_imagetime").joinpath("data/judge_prices.json")
                   .read_text(encoding="utf-8"), "judge_prices.json")
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
    if price is None:
        return 0.0
    return (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
