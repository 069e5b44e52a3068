"""The ImageTime suite's item, start to finish: generate (or reuse), measure, judge (or
reuse), cap, score; ``ImagetimeSuite`` gives these stages to the engine's pipeline.

Nothing here knows about pytest; the plugin turns the outcome into test results. A model or
judge failure raises ItemError with the reason: the item is an error, never a score of 0.
"""

from __future__ import annotations

import hashlib
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..cases.model import Case
from ..judges.base import SheetToJudge
from ..models.base import (
    Generated,
    GenerationRequest,
    ModelError,
    describe_failure,
)
from ..rubric.caps import AppliedCap, apply_caps, case_scopes, layout_labels
from ..rubric.facts import C_DIMS, RUBRIC_VERSION
from ..rubric.judgment import JudgeError, Judgment, validate_judgment
from ..rubric.repeats import combine
from ..scoring.item import ItemScores, score_item
from ..sheet import METRICS_VERSION, geometry
from ..sheet.prompts import SHEET, sheet_prompt
from ..store.judgments import store_judgment
from ..store.keys import input_key
from ..store.resume import (
    PRICE_KEYS,
    judgment_name,
    repeat_key,
    reusable_judgment,
    reusable_sheet,
)
from ..store.sheets import StoredSheet, decode_png, encode_png, rgb_png, store_image
from .item_error import ItemError
from .record import ItemRecord
from .references import Reference, ReferenceError
from .run_spec import RunSpec
from .suite import BackendCall, Suite

if TYPE_CHECKING:  # numpy at the first sheet measured (_measure_pixels), Pillow at the first read
    from PIL import Image
    from typing_extensions import TypeIs

    from ..sheet.metrics import SheetMetrics

IMAGE_RECORD_FORMAT = "imagetime-image/1"
JUDGMENT_RECORD_FORMAT = "imagetime-judgment/1"


@dataclass(frozen=True)
class ItemOutcome:
    record: ItemRecord
    judgment: Judgment
    caps: tuple[AppliedCap, ...]
    item_scores: ItemScores


def case_seed(run_seed: int, case_id: str) -> int:
    """Each case's seed: stable across runs and machines, different between cases."""
    digest = hashlib.sha256(f"{run_seed}:{case_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _failure_text(exc: BaseException) -> str:
    return describe_failure(exc, (ModelError, JudgeError))


def reference_for(spec: RunSpec, case: Case) -> Reference | None:
    """The case's reference in the scaffold setting (None otherwise); raises ItemError."""
    if spec.setting != "scaffold":
        return None
    if spec.references is None:
        raise ItemError("the scaffold setting needs references: --imagetime-reference-dir=DIR "
                        "or --imagetime-reference-model=SPEC")
    try:
        return spec.references.get(case)
    except ReferenceError as exc:
        raise ItemError(str(exc)) from exc


def generation_request(spec: RunSpec, case: Case,
                       reference: Reference | None = None) -> GenerationRequest:
    canvas = None if reference is None else geometry.scaffold(reference.image, spec.size)
    return GenerationRequest(case=case, setting=spec.setting, size=spec.size,
                             seed=case_seed(spec.run_seed, case.id),
                             reference=None if reference is None else reference.image,
                             prompt=sheet_prompt(case, reference is not None, spec.grid),
                             grid=spec.grid, scaffold=canvas)


def image_key(spec: RunSpec, request: GenerationRequest,
              reference: Reference | None = None) -> str:
    """Everything that decides the generated sheet; a change regenerates it."""
    parts: dict[str, Any] = {
        "model": spec.model.name, "config": dict(spec.model.config()),
        "case": request.case.id, "prompt_sha256": request.case.prompt_hash,
        "setting": request.setting, "size": request.size, "seed": request.seed,
        "token": spec.model.input_token(request=request),
    }
    # Added only where they apply, so prompt-only 2x2 sheets keep their keys.
    if request.text != request.case.prompt:
        parts["prompt_text_sha256"] = hashlib.sha256(request.text.encode()).hexdigest()
    if request.grid != SHEET:
        parts["grid"] = list(request.grid)
    if reference is not None:
        parts["reference_sha256"] = reference.sha256
    return input_key(parts)


def judgment_key(spec: RunSpec, case: Case, image_sha256: str,
                 reference: Reference | None = None) -> str:
    """Everything that decides a judgment; a change re-judges the sheet. A price decides
    nothing: a new price table must not pay for every stored judgment again."""
    judge = {k: v for k, v in spec.judge.config().items() if k not in PRICE_KEYS}
    parts: dict[str, Any] = {
        "judge": judge, "image_sha256": image_sha256,
        "case_spec_sha256": case.spec_hash, "setting": spec.setting,
        "rubric_version": RUBRIC_VERSION,
    }
    if reference is not None:
        parts["reference_sha256"] = reference.sha256
    return input_key(parts)


class Sheet:
    """A generated (or reused) sheet, ready to judge.

    A reused sheet comes as its checked file and is read and decoded only when something
    needs its pixels: resuming a judged item never does. ``metrics`` are the pixel facts
    measured when the sheet was stored in this process, for the pixel judge to reuse.
    """

    def __init__(self, image: Image.Image | None, sha256: str, record: Mapping[str, Any],
                 generated: bool, reference: Reference | None = None, *,
                 stored: StoredSheet | None = None,
                 metrics: SheetMetrics | None = None) -> None:
        if image is None and stored is None:
            raise ValueError("a sheet needs its image or its file")
        self._image = image
        self._stored = stored
        self.sha256 = sha256
        self.record = record
        self.generated = generated
        self.reference = reference
        self.metrics = metrics

    @property
    def image(self) -> Image.Image:
        """The pixels; raises ItemError when the stored file cannot be read, or changed
        after it was checked."""
        if self._image is None:
            assert self._stored is not None
            try:
                self._image = decode_png(self._stored.read())
            except (OSError, ValueError) as exc:
                raise ItemError(f"cannot read the stored sheet {self._stored.path}: {exc}; "
                                f"run again to draw it anew") from exc
            self._stored = None
        return self._image


@dataclass(frozen=True)
class _Pending:
    index: int
    case: Case
    request: GenerationRequest
    key: str
    reference: Reference | None


@dataclass(frozen=True)
class Drawn:
    """A sheet the backend has just drawn, not yet stored or measured (``store_sheet``)."""

    item: _Pending
    generated: Generated
    seconds: float
    batch: int  # sheets drawn in the same backend call
    # The sheet's PNG and pixel facts when another process made them (``measured_apart``).
    measured: Measured | None = None

    @property
    def case(self) -> Case:
        return self.item.case


def generate_sheet(spec: RunSpec, case: Case) -> Sheet:
    """The sheet for this case: the stored one when its inputs are unchanged, else a new one."""
    result = generate_sheets(spec, [case])[0]
    if isinstance(result, ItemError):
        raise result
    return result


def generate_sheets(spec: RunSpec, cases: Sequence[Case]) -> list[Sheet | ItemError]:
    """Sheets for several cases of one run, in order, drawn and stored here."""
    return [store_sheet(spec, r) if isinstance(r, Drawn) else r for r in draw_sheets(spec, cases)]


def draw_sheets(spec: RunSpec, cases: Sequence[Case]) -> list[Sheet | Drawn | ItemError]:
    """The backend's part of several cases of one run, in order: a stored sheet where its
    inputs are unchanged, else a drawing (those to draw go to the backend in one
    ``generate_batch`` call when it has one). A failure is that item's ItemError.

    Storing and measuring a drawing (``store_sheet``) is left to the caller, so that a
    pipeline can do it beside the next drawing instead of between two."""
    results: list[Sheet | Drawn | ItemError | None] = [None] * len(cases)
    pending: list[_Pending] = []
    for index, case in enumerate(cases):
        try:
            found = _stored_or_pending(spec, case, index)
        except ItemError as exc:
            results[index] = exc
            continue
        if isinstance(found, Sheet):
            results[index] = found
        else:
            pending.append(found)
    for item, outcome, seconds in _call_backend(spec, pending):
        results[item.index] = (outcome if isinstance(outcome, ItemError)
                               else Drawn(item, outcome, seconds, len(pending)))
    return [r for r in results if r is not None]


def stored_sheet(spec: RunSpec, case: Case) -> Sheet | None:
    """The case's stored sheet when its inputs are unchanged; None when it must be drawn,
    or cannot be (drawing it then says why)."""
    try:
        found = _stored_or_pending(spec, case, 0)
    except ItemError:
        return None
    return found if isinstance(found, Sheet) else None


def _stored_or_pending(spec: RunSpec, case: Case, index: int) -> Sheet | _Pending:
    """The stored sheet, else what drawing the case needs; raises ItemError."""
    reference = reference_for(spec, case)
    request = generation_request(spec, case, reference)
    key = image_key(spec, request, reference)
    stored = reusable_sheet(spec.paths, case.id, key, regenerate=spec.regenerate)
    if stored is None:
        return _Pending(index, case, request, key, reference)
    return Sheet(None, stored.sha256, stored.record, False, reference, stored=stored)


def planned_calls(spec: RunSpec, cases: Sequence[Case]) -> list[tuple[str, dict[str, Any]]]:
    """The backend calls ``draw_sheets`` will make for these cases if the store does not
    change meanwhile, as (method, keyword arguments): a backend drawing in a process of its
    own is sent them ahead (``draw_ahead``), so that it starts each one as soon as it
    finishes the one before. Cases that fail their lookup make no call."""
    pending: list[_Pending] = []
    for index, case in enumerate(cases):
        try:
            found = _stored_or_pending(spec, case, index)
        except ItemError:
            continue
        if not isinstance(found, Sheet):
            pending.append(found)
    if _batched(spec, pending):
        return [("generate_batch", {"requests": [p.request for p in pending]})]
    return [("generate", {"request": p.request}) for p in pending]


def _batched(spec: RunSpec, pending: Sequence[_Pending]) -> bool:
    return len(pending) > 1 and spec.model.supports_batch


def _call_backend(spec: RunSpec, pending: Sequence[_Pending]
          ) -> list[tuple[_Pending, Generated | ItemError, float]]:
    """Call the backend: one batch when it batches, else one request per sheet (the calls
    ``planned_calls`` names)."""
    if _batched(spec, pending):
        batch = spec.model.generate_batch
        started = time.perf_counter()
        try:
            outputs = list(batch(requests=[p.request for p in pending]))
            if len(outputs) != len(pending):
                raise ModelError(f"the backend returned {len(outputs)} images for "
                                 f"{len(pending)} requests")
        except Exception as exc:
            seconds = time.perf_counter() - started
            return [(p, _model_failure(spec, p.case, exc), seconds) for p in pending]
        share = (time.perf_counter() - started) / len(pending)
        return [(p, out, share) for p, out in zip(pending, outputs, strict=True)]
    drawn: list[tuple[_Pending, Generated | ItemError, float]] = []
    for p in pending:
        started = time.perf_counter()
        try:
            drawn.append((p, spec.model.generate(request=p.request),
                          time.perf_counter() - started))
        except Exception as exc:
            drawn.append((p, _model_failure(spec, p.case, exc), time.perf_counter() - started))
    return drawn


def _model_failure(spec: RunSpec, case: Case, exc: BaseException) -> ItemError:
    error = ItemError(f"model {spec.model.name} failed on {case.id}: {_failure_text(exc)}")
    error.__cause__ = exc
    return error


@dataclass(frozen=True)
class Measured:
    data: bytes | None  # the RGB PNG, None when the backend delivered one
    metrics: SheetMetrics | None  # None when not measured there (stored facts, dense grids)


def needs_measuring(spec: RunSpec, drawn: Drawn) -> tuple[bool, bool]:
    """What ``store_sheet`` would do to the pixels: encode them, measure them."""
    generated = drawn.generated
    return (not rgb_png(generated.data),
            spec.grid == SHEET and not _current_metrics(generated.facts))


def measured_apart(image: Image.Image, encode: bool, measure: bool) -> Measured:
    """The PNG and the pixel facts ``store_sheet`` would make, made in a measuring process
    (the pipeline's, beside a backend drawing in its own process); byte for byte the same."""
    rgb = image if image.mode == "RGB" else image.convert("RGB")
    return Measured(encode_png(rgb) if encode else None, _measure_pixels(rgb) if measure else None)


def store_sheet(spec: RunSpec, drawn: Drawn) -> Sheet:
    """Measure and store a drawn sheet (its file, then its record); raises ItemError when it
    cannot be written."""
    item, generated = drawn.item, drawn.generated
    case, request = item.case, item.request
    image = _rgb_pixels_checked(spec, drawn)
    record: dict[str, Any] = {
        "format": IMAGE_RECORD_FORMAT, "input_key": item.key, "model": spec.model.name,
        "model_config": dict(spec.model.config()), "case_id": case.id,
        "prompt_sha256": case.prompt_hash, "setting": spec.setting, "size": spec.size,
        "seed": request.seed, "seconds": round(drawn.seconds, 6), "date": now(),
        "width": image.width, "height": image.height, "details": dict(generated.details),
        "plugin_version": __version__,
    }
    if image.width != image.height:  # the protocol's sheet is square: say so where it is not
        record["square"] = False
    if request.text != case.prompt:
        record["prompt"] = request.text
    if drawn.batch > 1:
        record["batch"] = drawn.batch
    metrics = None
    if spec.grid != SHEET:
        record["grid"] = list(spec.grid)
    elif _current_metrics(generated.facts):  # layout facts are about 2x2 sheets
        record["pixel_metrics"] = dict(generated.facts or {})
    else:
        apart = drawn.measured.metrics if drawn.measured is not None else None
        metrics = apart if apart is not None else _measure_pixels(image)
        record["pixel_metrics"] = _metrics_json(metrics)
    if item.reference is not None:
        record["reference"] = {"sha256": item.reference.sha256,
                               "source": item.reference.source}
    data = generated.data if rgb_png(generated.data) else None
    if data is None and drawn.measured is not None:
        data = drawn.measured.data
    try:
        digest = store_image(spec.paths, case.id, image, record, data)
    except OSError as exc:
        raise ItemError(f"cannot store the sheet of {case.id} in "
                        f"{spec.paths.image(case.id).parent}: {exc}") from exc
    record["image_sha256"] = digest
    return Sheet(image, digest, record, True, item.reference, metrics=metrics)


def _rgb_pixels_checked(spec: RunSpec, drawn: Drawn) -> Image.Image:
    """The drawn sheet as RGB, decoded here if storing it needs its pixels; raises ItemError
    naming its file when they cannot be decoded. A file's chunks can all check out while
    its image data is short or garbled: that shows only when the pixels are read."""
    generated = drawn.generated
    encode, measure = needs_measuring(spec, drawn)
    apart = drawn.measured
    if generated.image.mode == "RGB" \
            and not (encode and (apart is None or apart.data is None)) \
            and not (measure and (apart is None or apart.metrics is None)):
        return generated.image
    try:
        generated.image.load()
        return generated.image if generated.image.mode == "RGB" \
            else generated.image.convert("RGB")
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        source = generated.details.get("source")
        what = f"the file {source}" if source else f"the sheet {spec.model.name} returned"
        raise ItemError(f"cannot decode {what} for {drawn.case.id}: its image data is "
                        f"broken ({exc})") from exc


def obtain_judgment(spec: RunSpec, case: Case, sheet: Sheet) -> tuple[Judgment, bool]:
    """The sheet's judgment; with repeats, each repeat stored on its own, then combined."""
    results = [_reused_or_new_judgment(spec, case, sheet, r) for r in range(spec.repeats)]
    return combine([j for j, _ in results]), any(new for _, new in results)


def stored_judgment(spec: RunSpec, case: Case, sheet: Sheet) -> Judgment | None:
    """The sheet's judgment from stored repeats alone; None when one is missing, stale or
    damaged (or ``--imagetime-rejudge``): then the judge must be called."""
    found = []
    for repeat in range(spec.repeats):
        judgment = stored_repeat(spec, case, sheet, repeat)[2]
        if judgment is None:
            return None
        found.append(judgment)
    return combine(found)


def stored_repeat(spec: RunSpec, case: Case, sheet: Sheet, repeat: int
                  ) -> tuple[str, str, Judgment | None]:
    """One repeat's input key, the name it is stored under, and its stored judgment when
    it is reusable (``store/resume.py``) and passes the checks a new one passes."""
    key = repeat_key(judgment_key(spec, case, sheet.sha256, sheet.reference), repeat)
    stored_as = judgment_name(case.id, repeat)
    # A key with a reference never held a price: nothing to take from before a price change.
    stored = reusable_judgment(spec.paths, stored_as, key, rejudge=spec.rejudge,
                               repeat=repeat if sheet.reference is None else None)
    if stored is None:
        return key, stored_as, None
    return key, stored_as, _trusted_judgment(spec, case, stored_as, stored)


class StoredDataWarning(UserWarning):
    """A stored file that parsed but cannot be trusted; it is made again."""


_warned: set[Path] = set()
_warned_lock = threading.Lock()


def _trusted_judgment(spec: RunSpec, case: Case, stored_as: str,
                      stored: Mapping[str, Any]) -> Judgment | None:
    """The stored judgment when it passes the checks a new one passes; else None (it is
    judged again) with a warning, once per file and process."""
    try:
        judgment = Judgment.from_json(stored["judgment"])
        validate_judgment(judgment, case, spec.setting, scored_dims=spec.judge.scored_dims)
        _check_numbers(judgment)
    except (KeyError, TypeError, ValueError, AttributeError, JudgeError) as exc:
        path = spec.paths.judgment(stored_as)
        with _warned_lock:
            first = path not in _warned
            _warned.add(path)
        if first:
            warnings.warn(StoredDataWarning(
                f"the stored judgment {path} cannot be trusted ({_failure_text(exc)}): judging "
                f"{case.id} again"), stacklevel=2)
        return None
    return judgment


def _check_numbers(judgment: Judgment) -> None:
    """Raise ValueError when a number the reports add up is not one."""
    for name in ("latency_s", "tokens_in", "tokens_out", "cost_usd"):
        value = getattr(judgment, name)
        if name == "cost_usd" and value is None:
            continue  # an unknown price
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"{name}={value!r} is not a number")
    if not all(isinstance(label, str) for label in judgment.labels):
        raise ValueError(f"labels {list(judgment.labels)!r} are not all text")


def _reused_or_new_judgment(spec: RunSpec, case: Case, sheet: Sheet, repeat: int
                  ) -> tuple[Judgment, bool]:
    key, stored_as, stored = stored_repeat(spec, case, sheet, repeat)
    if stored is not None:
        return stored, False
    image_sha256, reference = sheet.sha256, sheet.reference
    to_judge = SheetToJudge(case=case, setting=spec.setting, image=sheet.image,
                            path=spec.paths.image(case.id), image_sha256=image_sha256,
                            reference=None if reference is None else reference.image,
                            metrics=sheet.metrics)
    try:
        judgment = spec.judge.judge(sheet=to_judge)
        validate_judgment(judgment, case, spec.setting, scored_dims=spec.judge.scored_dims)
    except Exception as exc:
        raise ItemError(f"judge {spec.judge.name} failed on {case.id}: "
                        f"{_failure_text(exc)}") from exc
    store_judgment(spec.paths, stored_as, {
        "format": JUDGMENT_RECORD_FORMAT, "input_key": key, "case_id": case.id,
        "judge_config": dict(spec.judge.config()), "image_sha256": image_sha256,
        "case_spec_sha256": case.spec_hash, "setting": spec.setting,
        "rubric_version": RUBRIC_VERSION, "plugin_version": __version__,
        "judgment": judgment.to_json(),
    })
    return judgment, True


def _measure_pixels(image: Image.Image) -> SheetMetrics:
    # Imported at the first sheet measured: a run that only collects never loads numpy.
    from ..sheet.metrics import analyze

    return analyze(image)


def _metrics_json(measured: SheetMetrics) -> dict[str, Any]:
    """The layout facts measured on every sheet, whatever the judge; kept in its record."""
    return {"version": METRICS_VERSION,
            "implied_labels": list(measured.implied_labels()), "values": measured.to_json()}


def _current_metrics(facts: object) -> bool:
    """Whether stored pixel facts are this version's (others are measured again)."""
    return (isinstance(facts, Mapping) and facts.get("version") == METRICS_VERSION
            and isinstance(facts.get("implied_labels"), list)
            and isinstance(facts.get("values"), dict))


def pixel_labels(sheet: Sheet) -> tuple[str, ...]:
    """Failure labels the pixels alone justify; measured again if the stored facts are stale."""
    if sheet.metrics is not None:
        return sheet.metrics.implied_labels()
    facts = sheet.record.get("pixel_metrics")
    if not _current_metrics(facts):
        sheet.metrics = _measure_pixels(sheet.image)
        return sheet.metrics.implied_labels()
    assert isinstance(facts, Mapping)
    return tuple(str(label) for label in facts["implied_labels"])


def judge_sheet(spec: RunSpec, case: Case, base: ItemRecord, sheet: Sheet) -> ItemOutcome:
    """Judge (or reuse the judgment), apply the caps, and score; raises ItemError."""
    judgment, judged = obtain_judgment(spec, case, sheet)
    return scored_outcome(spec, case, base, sheet, judgment, judged)


def stored_outcome(spec: RunSpec, case: Case, base: ItemRecord, sheet: Sheet
                   ) -> ItemOutcome | None:
    """The outcome from stored judgments alone, without calling the judge; None when the
    judge must be called (``stored_judgment``)."""
    judgment = stored_judgment(spec, case, sheet)
    return None if judgment is None else scored_outcome(spec, case, base, sheet, judgment,
                                                          False)


def scored_outcome(spec: RunSpec, case: Case, base: ItemRecord, sheet: Sheet,
                   judgment: Judgment, judged: bool) -> ItemOutcome:
    """Caps applied to the judgment, scores and the item's record."""
    labels = tuple(sorted(set(judgment.labels) | set(pixel_labels(sheet))
                          | set(layout_labels(judgment.layout, spec.setting))))
    capped, caps = apply_caps(judgment.scores, labels, case_scopes(case, spec.setting))
    scores = score_item(capped)
    failed_predicates = tuple(v.id for v in judgment.predicates if v.value is not True)
    observed = tuple(v.id for v in judgment.forbidden if v.value is not False)
    record = replace(
        base, judge_model=judgment.judge_model, scores=capped,
        confidence={d: judgment.confidence.get(d) for d in C_DIMS}, c_mean=scores.c_mean,
        d_mean=scores.d_mean, overall=scores.overall, tree=dict(scores.tree),
        gate_pass=scores.gate_pass, labels=labels, caps=tuple(c.describe() for c in caps),
        predicates_failed=failed_predicates if judgment.evaluates_predicates else (),
        forbidden_observed=observed if judgment.evaluates_predicates else (),
        predicates_checked=judgment.evaluates_predicates,
        image=str(spec.paths.image(case.id)), judgment=str(spec.paths.judgment(case.id)),
        cost_usd=judgment.cost_usd, generation_cost_usd=_generation_cost(sheet.record),
        tokens_in=judgment.tokens_in, tokens_cached=judgment.tokens_cached,
        generation_s=sheet.record.get("seconds"),
        judge_s=judgment.latency_s, generated=sheet.generated, judged=judged,
        square=is_square(sheet),
    )
    return ItemOutcome(record, judgment, caps, scores)


def is_square(sheet: Sheet) -> bool:
    """Whether the sheet is square, from its record (any run's holds width and height)."""
    width, height = sheet.record.get("width"), sheet.record.get("height")
    if not isinstance(width, int) or not isinstance(height, int):
        width, height = sheet.image.size
    return bool(width == height)


def _generation_cost(record: Mapping[str, Any]) -> float | None:
    """The cost the image backend reported for this sheet (hosted backends), else None."""
    details = record.get("details")
    cost = details.get("cost_usd") if isinstance(details, Mapping) else None
    return float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None


def run_item(spec: RunSpec, case: Case, base: ItemRecord) -> ItemOutcome:
    """Everything an item does before its assertions; raises ItemError on infrastructure failure."""
    return judge_sheet(spec, case, base, generate_sheet(spec, case))


class ImagetimeSuite(Suite[RunSpec, Case, ItemRecord, Sheet, Drawn, ItemOutcome]):
    """The ImageTime suite's stages on the item engine: motion sheets, rubric judgments,
    capped scores."""

    def lookup(self, run: RunSpec, item: Case) -> Sheet | None:
        return stored_sheet(run, item)

    def draw(self, run: RunSpec, items: Sequence[Case]) -> Sequence[Sheet | Drawn | ItemError]:
        return draw_sheets(run, items)

    def is_drawn(self, drawing: Sheet | Drawn) -> TypeIs[Drawn]:
        return isinstance(drawing, Drawn)

    def store(self, run: RunSpec, drawn: Drawn) -> Sheet:
        return store_sheet(run, drawn)

    def reuse(self, run: RunSpec, item: Case, base: ItemRecord, stored: Sheet
              ) -> ItemOutcome | None:
        return stored_outcome(run, item, base, stored)

    def judge(self, run: RunSpec, item: Case, base: ItemRecord, stored: Sheet) -> ItemOutcome:
        return judge_sheet(run, item, base, stored)

    def spent_usd(self, outcome: ItemOutcome) -> float:
        return (outcome.record.cost_usd or 0.0) if outcome.record.judged else 0.0

    def calls_ahead(self, run: RunSpec, items: Sequence[Case]) -> list[BackendCall] | None:
        # Not in the scaffold setting: its lookups may draw references.
        return planned_calls(run, items) if run.setting == "prompt-only" else None

    def measured_apart(self, run: RunSpec, drawn: Drawn,
                       processes: Callable[[], Executor]) -> Drawn:
        """The PNG and pixel facts made in a measuring process; as it came when there is
        nothing to make, or the processes cannot (it is then encoded and measured here)."""
        # Pickle and the broken-pool error only when a sheet is measured apart.
        import pickle
        from concurrent.futures.process import BrokenProcessPool

        encode, measure = needs_measuring(run, drawn)
        if not (encode or measure):
            return drawn
        try:
            measured = processes().submit(measured_apart, drawn.generated.image, encode,
                                          measure).result()
        except (BrokenProcessPool, RuntimeError, OSError, pickle.PicklingError):
            return drawn
        return replace(drawn, measured=measured)
