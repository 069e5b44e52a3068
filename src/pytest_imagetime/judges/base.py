"""The judge side of a run: a judge scores one sheet of one case."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..rubric.facts import Setting

if TYPE_CHECKING:  # annotations only: the options module imports this one at pytest start-up
    from PIL import Image

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


@runtime_checkable
class Judge(Protocol):
    """Scores sheets. Raises judgment.JudgeError when it cannot: never a made-up score."""

    @property
    def name(self) -> str:
        """Short name for run directories and reports, e.g. ``pixel``."""

    @property
    def scored_dims(self) -> frozenset[str]:
        """Dimensions this judge scores; the rest are null in its judgments."""

    def config(self) -> Mapping[str, JSON]:
        """Judge model and versions; a change re-judges stored sheets."""

    def judge(self, *, sheet: SheetToJudge) -> Judgment: ...


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
