"""The judge side of a run: a judge scores one sheet of one case. The base class declares what
every judge must implement and each optional feature with its default; the adapter gives a
third-party judge that does not inherit those defaults."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..backends.registry import check_required
from ..rubric.facts import Setting

if TYPE_CHECKING:  # annotations only: the options module imports this one at pytest start-up
    from PIL import Image

    from ..backends.prices import Price
    from ..cases.model import Case
    from ..rubric.judgment import Judgment
    from ..sheet.metrics import SheetMetrics

JSON = Any


@dataclass(frozen=True)
class SheetToJudge:
    case: Case
    setting: Setting
    image: Image.Image
    path: Path
    image_sha256: str
    reference: Image.Image | None = None
    # The pixel facts the harness measured on this sheet (every sheet gets them), when it did
    # so in this process: a judge working from pixels need not measure them again.
    metrics: SheetMetrics | None = None


class Judge(abc.ABC):
    """Scores sheets. Raises judgment.JudgeError when it cannot: never a made-up score.

    A judge implements ``name``, ``scored_dims``, ``config`` and ``judge``, and overrides the
    optional features below that it has; each has the default that suits a judge without it.
    A third-party judge that does not inherit from this class is wrapped by ``adapt_judge``.
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """Short name for run directories and reports, e.g. ``pixel``."""

    @property
    @abc.abstractmethod
    def scored_dims(self) -> frozenset[str]:
        """Dimensions this judge scores; the rest are null in its judgments."""

    @abc.abstractmethod
    def config(self) -> Mapping[str, JSON]:
        """Judge model and versions; a change re-judges stored sheets."""

    @abc.abstractmethod
    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        """The judgment of one sheet; JudgeError when there is none."""

    # ------------------------------------------------------------ optional features

    @property
    def cpu_bound(self) -> bool:
        """Computes in this process: a sheet is judged on the thread that has it, not in the
        judge pool that overlaps the waits of judges calling a server."""
        return False

    @property
    def calls_a_model(self) -> bool:
        """Its calls are billed by a model provider: where ``price`` is None the cost of a run
        is unknown, not 0."""
        return False

    @property
    def price(self) -> Price | None:
        """The price of its calls; None where it is unknown or there are no calls."""
        return None

    @property
    def response_format(self) -> str:
        """How answers are asked for: ``json_schema``, or ``json_object`` with the answer's
        schema in the message (longer prompts)."""
        return "json_schema"

    @property
    def answering(self) -> Judge:
        """The judge that answers one sheet at once: itself, or the judge a batch wraps."""
        return self

    def prompt_template(self) -> str | None:
        """The prompt's text, kept with the run (``judge_prompt.txt``); None: no prompt."""
        return None


class PricedCalls(Protocol):
    """What makes a judge's model calls: a JSON asker, or a judge it wraps."""

    @property
    def price(self) -> Price | None: ...

    @property
    def response_format(self) -> str: ...


class CallingJudge(Judge):
    """A judge whose model calls are made by ``calls_through``: it is billed, and asks for its
    answers, as that one is and does."""

    calls_a_model = True

    @property
    @abc.abstractmethod
    def calls_through(self) -> PricedCalls:
        """The asker or judge that calls the model."""

    @property
    def price(self) -> Price | None:
        return self.calls_through.price

    @property
    def response_format(self) -> str:
        return self.calls_through.response_format


REQUIRED_JUDGE_METHODS = ("name", "scored_dims", "config", "judge")


class PluginJudge(Judge):
    """A third-party judge that does not inherit from Judge: its optional features are read
    here, once for every caller, with the base class's defaults where it has none."""

    def __init__(self, judge: Any) -> None:
        self.wrapped = judge

    @property
    def name(self) -> str:
        return str(self.wrapped.name)

    @property
    def scored_dims(self) -> frozenset[str]:
        return frozenset(self.wrapped.scored_dims)

    def config(self) -> Mapping[str, JSON]:
        config: Mapping[str, JSON] = self.wrapped.config()
        return config

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        judgment: Judgment = self.wrapped.judge(sheet=sheet)
        return judgment

    def _feature(self, name: str, default: Any) -> Any:
        return getattr(self.wrapped, name, default)

    @property
    def cpu_bound(self) -> bool:
        return bool(self._feature("cpu_bound", False))

    @property
    def calls_a_model(self) -> bool:
        return hasattr(self.wrapped, "price")

    @property
    def price(self) -> Price | None:
        price: Price | None = self._feature("price", None)
        return price

    @property
    def response_format(self) -> str:
        options = self._feature("options", None)
        return str(getattr(options, "response_format", None) or "json_schema")

    def prompt_template(self) -> str | None:
        template = self._feature("prompt_template", None)
        return str(template()) if callable(template) else None

    def __getattr__(self, name: str) -> Any:
        # Attributes of its own stay reachable through the wrapper.
        if "wrapped" not in self.__dict__:  # being copied or unpickled: not built yet
            raise AttributeError(name)
        return getattr(self.__dict__["wrapped"], name)


def adapt_judge(judge: object, name: str) -> Judge:
    """``judge`` as a Judge: itself when it inherits, else wrapped; IncompleteBackend naming
    the judge and what it lacks when it cannot judge at all."""
    if isinstance(judge, Judge):
        return judge
    check_required(judge, name, "judge", REQUIRED_JUDGE_METHODS,
                   "pytest_imagetime.judges.base.Judge")
    return PluginJudge(judge)


@dataclass(frozen=True)
class JudgeOptions:
    """Settings a judge factory may take as ``options=`` (the ``--imagetime-judge-*`` options)."""

    model: str = "gpt-5.5"
    base_url: str | None = None
    key_env: str | None = "OPENAI_API_KEY"  # None: the server needs no key
    concurrency: int = 8
    timeout_s: float = 120.0
    retries: int = 2  # transport retries of one request (429, 5xx, timeouts, resets)
    reasks: int = 2  # requests again after an answer that arrived but is not usable
    params: Mapping[str, JSON] = field(default_factory=dict)  # extra request parameters
    headers: Mapping[str, str] = field(default_factory=dict)  # extra HTTP headers (gateways)
    # (input, output[, cached input]) USD per 1M tokens
    price_per_mtok: tuple[float, ...] | None = None
    prices_file: Path | None = None
    response_format: str = "json_schema"
    # False in a session that makes no calls (--collect-only, --imagetime-dry-run, ...): a
    # hosted backend then needs neither its package nor its key.
    calls: bool = True
    # The folder a relative path in a spec's argument (files:DIR, replay:DIR) is relative to:
    # the ini file's when the spec came from it; None: the working directory.
    spec_dir: Path | None = None
