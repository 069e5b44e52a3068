"""What the hosted backends that are not OpenAI's share: their key (read through ``keys.py``),
their base URL, their price and the parts of a record that every one of them writes.

Each of them (``gemini-image``, ``seedream``, ``bfl``) asks for one square 2x2 sheet in one
request and keeps the first image: the ImageTime paper's single pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..backends.hosted_calls import CallsConfig, HostedCalls, http_failure
from ..backends.openai_client import NO_CALLS, Failure, safe_url
from .base import ImageModel, ModelError, ModelOptions
from .keys import key_env_named, key_env_of, read_key
from .openai_images import price_for
from .overrides import Converter, parse_overrides, split_argument


def per_image_cost(model: str, megapixels: float) -> dict[str, Any]:
    """The cost of one image from the shipped price table: a flat ``image`` price, or
    ``first_megapixel`` and ``extra_megapixel`` (each started megapixel after the first)."""
    price = price_for(model)
    if price is None:
        return {"cost_usd": None, "cost_note": f"no price for {model!r} in image_prices.json"}
    if "image" in price:
        return {"cost_usd": round(price["image"], 6)}
    if "first_megapixel" in price:
        extra = max(0, -int(-(megapixels - 1.0) // 1))
        return {"cost_usd": round(price["first_megapixel"]
                                  + extra * price.get("extra_megapixel", 0.0), 6)}
    return {"cost_usd": None, "cost_note": f"{model!r} is priced by tokens, not by image"}


class HostedModel(ImageModel):
    """The parts of a hosted backend that do not depend on its API; ``generate`` is each
    API's own. Prompt-only: none of them takes a scaffold (``accepts_reference`` is False)."""

    backend = "hosted"  # the registered name, recorded in the config
    default_base_url = ""

    def __init__(self, argument: str | None, name: str, options: ModelOptions | None, *,
                 default_model: str, converters: Mapping[str, Converter]) -> None:
        """``argument`` is what follows ``name:`` in the spec: a model, then its overrides."""
        target, overrides = split_argument(argument)
        self._spec = f"{name}:{argument}" if argument else name
        self.model = target or default_model
        self.overrides = dict(parse_overrides(overrides, converters, name))
        self.options = options or ModelOptions()
        self._calls: HostedCalls | None = None  # set by a subclass that calls its API
        self._headers: dict[str, str] = {}  # of a backend that sends its key in a header

    @property
    def name(self) -> str:
        return self._spec

    @property
    def base_url(self) -> str:
        """The endpoint as shown and stored: credentials in it are masked."""
        return safe_url(self.options.base_url or self.default_base_url) or ""

    @property
    def concurrency(self) -> int:
        """Requests the run may have in flight at once; generate is thread-safe."""
        return self.options.concurrency

    def config(self) -> Mapping[str, Any]:
        return {"backend": self.backend, "model": self.model, "base_url": self.base_url,
                "overrides": dict(sorted(self.overrides.items()))}

    def no_calls(self) -> ModelError:
        return ModelError(f"the {self.backend} model was {NO_CALLS}")

    @property
    def calls(self) -> HostedCalls:
        if self._calls is None:
            raise self.no_calls()
        return self._calls

    def call_with_key_header(
            self, name: str, own_key_env: str, who: str,
            key_header: Callable[[str], Mapping[str, str]], *,
            check: Callable[[], None] | None = None,
            classify: Callable[[BaseException], Failure | None] = http_failure,
            refusal: Callable[[Failure], bool] = lambda failure: False) -> None:
        """Read the key and set up the calls of a backend that sends it in a header (over the
        user's own headers); ``name`` is the registered name the user typed."""
        key_env = key_env_of(self.options, own_key_env)
        key = read_key(key_env, f"the {self.backend} model",
                       named=key_env_named(self.options))
        self._headers = {**self.options.headers, **(key_header(key) if key else {})}
        self._calls = HostedCalls(self.calls_config(who, key_env, key, name), error=ModelError,
                                  check=check, classify=classify, refusal=refusal)

    def calls_config(self, who: str, key_env: str | None, key: str | None, name: str,
                     credentials: str = "") -> CallsConfig:
        """Where this backend calls, with its key and the user's headers kept out of every
        message; ``name`` is the registered name the user typed."""
        return CallsConfig(
            who=who, shown_url=self.base_url, key_env=key_env,
            timeout_s=self.options.timeout_s, retries=self.options.retries,
            secrets=tuple(s for s in (key, *self.options.headers.values()) if s),
            model_option=f"the model in {name}:MODEL", credentials=credentials)
