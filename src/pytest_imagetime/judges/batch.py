"""Judging through OpenAI's Batch API (``--imagetime-judge-batch``): half the price, answers
within 24 hours.

A batch needs every request up front, so in a batch run each pytest process first works
through all of its items before any of them runs its test (``BatchJudge.prepare``, called at
the first item the store does not finish): it draws or reuses every sheet, writes one
Chat Completions request per judgment still missing (JSONL, ``custom_id`` per request) in
files of at most 50,000 requests and 190 MB, uploads them (Files API, ``purpose=batch``),
creates the batches (``/v1/batches``, ``/v1/chat/completions``, ``24h``) and polls them. Each
answer goes through the vlm judge's own parsing; an invalid answer, or a request the batch
could not serve for a passing reason (429, 5xx), is asked again in a follow-up batch, up to
``--imagetime-judge-reasks`` times. The items then run as usual: their judge hands each
sheet the judgment its batch gave (or the reason it has none), and the runner validates,
caps, stores and scores it like any other, with its cost at the Batch API's rates.

Every batch is written down in the run's ``batches/`` folder before and after it is created
(atomically): a killed run re-attaches to the batches it submitted, and reads the results
it already downloaded from there, instead of paying for the same requests again. A batch that
failed, expired or was cancelled makes its unanswered requests errors that say so; the next
run submits them anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backends.openai_client import InvalidAnswer, usage_tokens
from ..cases.model import Case
from ..engine.item_error import ItemError
from ..engine.run_spec import RunSpec
from ..engine.runner import Sheet, stored_repeat, stored_sheet
from ..rubric.judgment import JudgeError, Judgment
from ..store.atomic import atomic_write_text, read_json
from .base import CallingJudge, Judge, PricedCalls, SheetToJudge
from .vlm import VlmJudge, _short

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
MAX_REQUESTS = 50_000  # per batch, as the Batch API allows
MAX_FILE_BYTES = 190 * 1024 * 1024  # the API takes files up to 200 MB
WAITING = frozenset({"validating", "in_progress", "finalizing", "cancelling"})
ENDED_WITHOUT_ALL = frozenset({"failed", "expired", "cancelled"})
# Statuses of a request inside a batch that another try may cure.
PASSING_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
LEDGER_FORMAT = "imagetime-batch/1"


class BatchFailure(Exception):
    """The Batch API could not be used at all (no such endpoint, no access)."""


@dataclass
class _Request:
    """One judgment to ask for: the item it is for and every attempt's tokens so far."""

    base_id: str
    spec: RunSpec
    case: Case
    answer_key: tuple[str, str]  # (sheet path, image sha256): where the item looks
    problems: list[str] = field(default_factory=list)
    tokens: list[int] = field(default_factory=lambda: [0, 0, 0])  # in, out, cached

    def custom_id(self, attempt: int) -> str:
        return f"{self.base_id}-a{attempt}"


@dataclass
class _Ledger:
    """What this process submitted in one batch, as kept in ``batches/<name>.json``."""

    path: Path
    data: dict[str, Any]

    @property
    def batch_id(self) -> str | None:
        value = self.data.get("batch_id")
        return str(value) if value else None

    def save(self) -> None:
        atomic_write_text(self.path, [json.dumps(self.data, indent=1, sort_keys=True) + "\n"])


class _Chunk:
    """One batch's input file, written on disk as its lines come."""

    def __init__(self, folder: Path) -> None:
        self.name = f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
        self.path = folder / f"{self.name}.input.jsonl"
        self._handle = self.path.open("wb")
        self.ids: list[str] = []
        self.size = 0
        self.digest = hashlib.sha256()

    def fits(self, length: int) -> bool:
        return len(self.ids) < MAX_REQUESTS and self.size + length <= MAX_FILE_BYTES

    def add(self, custom_id: str, line: bytes) -> None:
        self._handle.write(line)
        self.digest.update(line)
        self.ids.append(custom_id)
        self.size += len(line)

    def close(self) -> None:
        self._handle.close()


@dataclass
class _Result:
    body: dict[str, Any] | None  # the Chat Completions response, when the request got one
    error: str | None
    passing: bool  # another try may cure the error
    seconds: float
    status: int | None = None  # the request's HTTP status, when it got one


class BatchJudge(CallingJudge):
    """The vlm judge, its answers coming from batches judged before the items run."""

    cpu_bound = False

    def __init__(self, inner: VlmJudge, folder: Path, poll_s: float = 30.0,
                 write_line: Callable[[str], None] | None = None,
                 progress_every_s: float = 30.0, ignore_before: float | None = None) -> None:
        self.inner = inner
        # --imagetime-rejudge: batches submitted before this session are not reused.
        self.ignore_before = ignore_before
        self.folder = folder
        self.poll_s = poll_s
        self.write_line = write_line or (lambda line: None)
        self.progress_every_s = progress_every_s
        self._answers: dict[tuple[str, str], list[Judgment | str]] = defaultdict(list)
        self._sleep: Callable[[float], None] = time.sleep

    # ------------------------------------------------------------ the Judge protocol

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def scored_dims(self) -> frozenset[str]:
        return self.inner.scored_dims

    @property
    def calls_through(self) -> PricedCalls:
        return self.inner

    @property
    def answering(self) -> Judge:
        return self.inner

    @property
    def options(self) -> Any:
        return self.inner.options

    def config(self) -> Mapping[str, Any]:
        # The same judgments as the synchronous judge: stored ones are shared both ways.
        return self.inner.config()

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        waiting = self._answers.get((str(sheet.path), sheet.image_sha256))
        if not waiting:
            raise JudgeError(f"no batch answered for this sheet of {sheet.case.id} (it was not "
                             f"in this run's batches); run again to judge it in a batch")
        answer = waiting.pop(0)
        if not waiting:
            del self._answers[(str(sheet.path), sheet.image_sha256)]
        if isinstance(answer, str):
            raise JudgeError(answer)
        return answer

    # ------------------------------------------------------------ start-up

    def check(self) -> None:
        """Ask the endpoint for its batches once, before anything is drawn: an endpoint
        without the Batch API, or a key it refuses, stops the run at start-up."""
        try:
            self.inner.client().batches.list(limit=1)
        except Exception as exc:  # the SDK's errors are worded below, others raised
            status, message = self._api_error(exc)
            if status is not None:
                raise BatchFailure(self.inner._redact(
                    f"the judge endpoint {self._where()} does not take batches (HTTP "
                    f"{status}: {_short(message)}); drop --imagetime-judge-batch for a "
                    f"server without the Batch API")) from None
            raise BatchFailure(self.inner._redact(
                f"cannot reach the Batch API of {self._where()}: {_short(message)}")) from None

    def _api_error(self, exc: Exception) -> tuple[int | None, str]:
        """An SDK error's HTTP status (None: no answer) and message; any other exception is
        raised again."""
        found = self.inner.endpoint.api_error(exc)
        if found is None:
            raise exc
        return found

    def _where(self) -> str:
        return self.inner.base_url or "api.openai.com"

    # ------------------------------------------------------------ the batch phase

    def prepare(self, sheets: Iterable[tuple[RunSpec, Case, Sheet]]) -> None:
        """Judge in batches every judgment these sheets still need (each stored, as drawn
        or reused); their items then find the answers here. Sheets are taken one at a time
        and let go: only what each request needs stays in memory."""
        requests = self._requests(sheets)
        retries = self.inner.options.reasks  # each follow-up batch asks again
        try:
            for attempt in range(1, retries + 2):
                if not requests:
                    break
                requests = self._round(requests, attempt, last=attempt == retries + 1)
        except BatchFailure as exc:  # every request still waiting is an error with the reason
            for request in requests:
                self._answers[request.answer_key].append(str(exc))

    def _requests(self, sheets: Iterable[tuple[RunSpec, Case, Sheet]]) -> list[_Request]:
        requests: list[_Request] = []
        for spec, case, sheet in sheets:
            if not spec.judged:
                continue
            answer_key = (str(spec.paths.image(case.id)), sheet.sha256)
            for repeat in range(spec.repeats):
                key, _, stored = stored_repeat(spec, case, sheet, repeat)
                if stored is None:
                    requests.append(_Request(key[:40], spec, case, answer_key))
        return requests

    def _body(self, request: _Request) -> dict[str, Any] | str:
        """The request's Chat Completions body, from its stored sheet; why not, as text."""
        sheet = stored_sheet(request.spec, request.case)
        if sheet is None or sheet.sha256 != request.answer_key[1]:
            return (f"the sheet of {request.case.id} changed or vanished while its batch was "
                    f"prepared; run again")
        try:
            image = sheet.image
        except ItemError as exc:
            return str(exc)
        reference = sheet.reference
        to_judge = SheetToJudge(case=request.case, setting=request.spec.setting,
                                image=image, path=request.spec.paths.image(request.case.id),
                                image_sha256=sheet.sha256,
                                reference=None if reference is None else reference.image)
        return self.inner.request(to_judge)

    def _round(self, requests: list[_Request], attempt: int, last: bool) -> list[_Request]:
        """Ask every request once (attaching to batches already submitted for them) and
        sort the answers: judgments, errors, and requests to ask again."""
        ledgers = self._ledgers()
        # Two items may need the same judgment (the same sheet of the same case in two
        # runs): one request, its answer for both.
        by_id: dict[str, list[_Request]] = defaultdict(list)
        for request in requests:
            by_id[request.custom_id(attempt)].append(request)
        attached: dict[str, _Ledger] = {}
        to_submit: list[_Request] = []
        for custom_id, group in by_id.items():
            ledger = ledgers.get(custom_id)
            if ledger is not None:
                attached[custom_id] = ledger
            else:
                to_submit.append(group[0])
        given_up: dict[str, str] = {}
        for ledger in self._submit(to_submit, attempt, given_up):
            for custom_id in ledger.data["custom_ids"]:
                attached[custom_id] = ledger
        results = self._wait_and_read({id(x): x for x in attached.values()}.values(),
                                      set(by_id))
        again: list[_Request] = []
        for custom_id, group in by_id.items():
            for request in group:
                if custom_id in given_up:
                    self._answers[request.answer_key].append(given_up[custom_id])
                    continue
                self._sort(request, results.get(custom_id), attempt, last, again)
        return again

    def _sort(self, request: _Request, result: _Result | None, attempt: int, last: bool,
              again: list[_Request]) -> None:
        """The request's answer for its item, or the request asked again."""
        if result is None:
            result = _Result(None, "the batch returned no answer for this request", True, 0.0)
        judgment, problem, curable = self._judgment(request, result)
        if judgment is not None:
            self._answers[request.answer_key].append(judgment)
        elif curable and not last:
            request.problems.append(problem)
            again.append(request)
        elif curable:
            problems = " | ".join([*request.problems, problem])
            self._answers[request.answer_key].append(
                f"no valid judgment after {attempt} batch attempt"
                f"{'s' if attempt > 1 else ''}: {problems}")
        else:
            self._answers[request.answer_key].append(problem)

    def _judgment(self, request: _Request, result: _Result
                  ) -> tuple[Judgment | None, str, bool]:
        """The judgment in a result, else the problem and whether asking again may cure
        it."""
        if result.body is None:
            return None, result.error or "no answer", result.passing
        try:
            response = self.inner.endpoint.chat_completion(result.body)
        except InvalidAnswer as exc:  # a body that is no chat completion: asked again
            return None, str(exc), True
        tokens = request.tokens
        for i, used in enumerate(usage_tokens(response)):
            tokens[i] += used
        try:
            judgment = self.inner.answer(response, request.case, request.spec.setting,
                                         (tokens[0], tokens[1], tokens[2]), result.seconds,
                                         batch=True)
        except InvalidAnswer as exc:
            return None, self.inner._redact(str(exc)), True
        return judgment, "", False

    # ------------------------------------------------------------ ledgers

    def _ledgers(self) -> dict[str, _Ledger]:
        """Every request this run's folder says was submitted and not given up: its
        custom_id and the batch it is in. A batch that ended without all its answers
        keeps only the requests it answered (the rest are submitted anew)."""
        found: dict[str, _Ledger] = {}
        if not self.folder.is_dir():
            return found
        for path in sorted(self.folder.glob("*.json")):
            data = read_json(path)
            if not isinstance(data, dict) or data.get("format") != LEDGER_FORMAT:
                continue
            if self.ignore_before is not None \
                    and float(data.get("created") or 0) < self.ignore_before:
                continue
            ledger = _Ledger(path, data)
            ids = data.get("custom_ids") or []
            if data.get("status") in ENDED_WITHOUT_ALL:
                answered = set(data.get("answered") or [])
                ids = [i for i in ids if i in answered]
            for custom_id in ids:
                found[custom_id] = ledger
        return found

    def _submit(self, requests: Sequence[_Request], attempt: int,
                given_up: dict[str, str]) -> list[_Ledger]:
        """Write the requests as JSONL files within the API's limits (on disk: a file's
        sheets can be hundreds of MB), upload each and create its batch; each is written
        down before and after it is created. A request that cannot be written goes into
        ``given_up`` with the reason."""
        if not requests:
            return []
        self.folder.mkdir(parents=True, exist_ok=True)
        ledgers: list[_Ledger] = []
        chunk: _Chunk | None = None
        for request in requests:
            body = self._body(request)
            if isinstance(body, str):
                given_up[request.custom_id(attempt)] = body
                continue
            line = (json.dumps({"custom_id": request.custom_id(attempt), "method": "POST",
                                "url": ENDPOINT, "body": body},
                               ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            if chunk is not None and not chunk.fits(len(line)):
                ledgers.append(self._create(chunk))
                chunk = None
            if chunk is None:
                chunk = _Chunk(self.folder)
            chunk.add(request.custom_id(attempt), line)
        if chunk is not None:
            ledgers.append(self._create(chunk))
        return ledgers

    def _create(self, chunk: _Chunk) -> _Ledger:
        client = self.inner.client()
        chunk.close()
        name = chunk.name
        custom_ids = chunk.ids
        ledger = _Ledger(self.folder / f"{name}.json", {
            "format": LEDGER_FORMAT, "name": name, "judge_model": self.inner.model,
            "endpoint": ENDPOINT, "custom_ids": custom_ids, "requests": len(custom_ids),
            "input_file_id": None, "batch_id": None, "status": "uploading",
            "created": time.time(), "input_sha256": chunk.digest.hexdigest()})
        try:
            with chunk.path.open("rb") as handle:
                uploaded = client.files.create(file=(f"imagetime-{name}.jsonl", handle),
                                               purpose="batch")
            ledger.data.update(input_file_id=uploaded.id, status="uploaded")
            ledger.save()  # a kill from here on finds the file, and the batch made from it
            batch = client.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT,
                                          completion_window=COMPLETION_WINDOW,
                                          metadata={"imagetime_batch": name})
        except Exception as exc:  # the SDK's errors are worded below, others raised
            status, message = self._api_error(exc)
            if status is not None:
                raise BatchFailure(self.inner._redact(
                    f"the Batch API of {self._where()} refused a batch of {len(custom_ids)} "
                    f"requests (HTTP {status}: {_short(message)})")) from None
            raise BatchFailure(self.inner._redact(
                f"cannot submit a batch to {self._where()}: {_short(message)}")) from None
        finally:
            chunk.path.unlink(missing_ok=True)
        ledger.data.update(batch_id=batch.id, status=batch.status)
        ledger.save()
        self.write_line(f"[imagetime] batch {batch.id}: {len(custom_ids)} judge requests "
                        f"submitted ({chunk.size / 1e6:.1f} MB)")
        return ledger

    def _reattach(self, ledger: _Ledger) -> None:
        """A batch written down as uploaded but not as created (the run was killed in
        between): the one made from its file, else one made now."""
        client = self.inner.client()
        file_id = ledger.data.get("input_file_id")
        for batch in client.batches.list(limit=100):
            if batch.input_file_id == file_id:
                ledger.data.update(batch_id=batch.id, status=batch.status)
                ledger.save()
                return
        batch = client.batches.create(input_file_id=file_id, endpoint=ENDPOINT,
                                      completion_window=COMPLETION_WINDOW,
                                      metadata={"imagetime_batch": ledger.data["name"]})
        ledger.data.update(batch_id=batch.id, status=batch.status)
        ledger.save()

    # ------------------------------------------------------------ waiting and reading

    def _wait_and_read(self, ledgers: Iterable[_Ledger], wanted: set[str]
                       ) -> dict[str, _Result]:
        client = self.inner.client()
        waiting = list(ledgers)
        results: dict[str, _Result] = {}
        started = time.monotonic()
        last_line = ("", 0.0)
        try:
            for ledger in waiting:
                if ledger.batch_id is None:
                    self._reattach(ledger)
            while True:
                batches = {}
                for ledger in waiting:
                    cached = self._cached(ledger)
                    batch = None if cached else client.batches.retrieve(ledger.batch_id)
                    batches[ledger.path] = batch
                    if batch is not None and batch.status != ledger.data.get("status"):
                        ledger.data["status"] = batch.status
                        ledger.save()
                line = self._progress(waiting, batches)
                now = time.monotonic()
                if self.progress_every_s > 0 and line != last_line[0] \
                        and now - last_line[1] >= min(self.progress_every_s, 60.0):
                    self.write_line(f"{line}, waited {_minutes(now - started)}")
                    last_line = (line, now)
                done = [ledger for ledger in waiting
                        if getattr(batches[ledger.path], "status", None) not in WAITING]
                for ledger in done:
                    results.update(self._read(ledger, batches.get(ledger.path), wanted))
                waiting = [ledger for ledger in waiting if ledger not in done]
                if not waiting:
                    return results
                self._sleep(self.poll_s)
        except Exception as exc:  # the SDK's errors end the wait, others are raised
            self._api_error(exc)
            reason = self.inner._redact(f"the Batch API of {self._where()} failed while this "
                                        f"run waited for its batches: {_short(str(exc))}; run "
                                        f"again to re-attach to them")
            for ledger in waiting:
                for custom_id in ledger.data["custom_ids"]:
                    results.setdefault(custom_id, _Result(None, reason, False, 0.0))
            return results

    def _progress(self, ledgers: Sequence[_Ledger], batches: Mapping[Path, Any]) -> str:
        statuses: dict[str, int] = defaultdict(int)
        done = failed = total = 0
        for ledger in ledgers:
            batch = batches.get(ledger.path)
            if batch is None:
                continue
            statuses[batch.status] += 1
            counts = batch.request_counts
            total += counts.total if counts else len(ledger.data["custom_ids"])
            done += counts.completed if counts else 0
            failed += counts.failed if counts else 0
        states = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))
        return (f"[imagetime] batches: {states or 'read from disk'}; {done}/{total} requests "
                f"answered, {failed} failed")

    def _cached(self, ledger: _Ledger) -> bool:
        """Whether the batch's results were downloaded by an earlier look (this run or a
        killed one)."""
        return bool(ledger.data.get("downloaded"))

    def _read(self, ledger: _Ledger, batch: Any, wanted: set[str]) -> dict[str, _Result]:
        """The results of an ended batch, downloaded once and kept beside its ledger."""
        if not self._cached(ledger):
            self._download(ledger, batch)
        data = ledger.data
        seconds = float(data.get("seconds") or 0.0)
        results: dict[str, _Result] = {}
        for kind in ("output", "errors"):
            path = ledger.path.with_suffix(f".{kind}.jsonl")
            if not path.exists():
                continue
            for line in _lines(path):
                custom_id = str(line.get("custom_id"))
                if custom_id in wanted:
                    results[custom_id] = _line_result(line, seconds)
        if data.get("status") in ENDED_WITHOUT_ALL:
            # Unanswered because the batch ended: the batch's reason, not its lines' words.
            reason = _Result(None, _ended_reason(data), False, seconds)
            for custom_id in data["custom_ids"]:
                found = results.get(custom_id)
                unanswered = found is None or (found.body is None and found.status is None)
                if custom_id in wanted and unanswered:
                    results[custom_id] = reason
        return results

    def _download(self, ledger: _Ledger, batch: Any) -> None:
        client = self.inner.client()
        answered: list[str] = []
        for kind, file_id in (("output", batch.output_file_id),
                              ("errors", batch.error_file_id)):
            if not file_id:
                continue
            target = ledger.path.with_suffix(f".{kind}.jsonl")
            partial = target.with_suffix(".part")
            # Streamed to disk, then renamed: a kill never leaves a half file to be trusted.
            with client.files.with_streaming_response.content(file_id) as response, \
                    partial.open("wb") as handle:
                for piece in response.iter_bytes():
                    handle.write(piece)
            os.replace(partial, target)
            if kind == "output":
                answered.extend(str(line.get("custom_id")) for line in _lines(target))
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        ended = (batch.completed_at or batch.failed_at or batch.expired_at
                 or batch.cancelled_at or batch.created_at)
        ledger.data.update(
            status=batch.status, downloaded=True, answered=answered,
            output_file_id=batch.output_file_id, error_file_id=batch.error_file_id,
            seconds=max(0, int(ended) - int(batch.created_at)),
            errors=[{"code": e.code, "message": e.message, "line": e.line} for e in errors])
        ledger.save()


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSONL file, one at a time; a damaged line is left out (its
    request gets no answer, and is asked again)."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        for raw in handle:
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict):
                yield line


def _line_result(line: Mapping[str, Any], seconds: float) -> _Result:
    """One line of an output or error file: the response body, or why there is none."""
    response = line.get("response") or {}
    status = response.get("status_code")
    body = response.get("body")
    error = line.get("error")
    if status == 200 and isinstance(body, dict) and not error:
        return _Result(body, None, False, seconds, status)
    message = ""
    if isinstance(error, Mapping):
        message = f"{error.get('code') or 'error'}: {error.get('message') or ''}"
    elif isinstance(body, Mapping) and isinstance(body.get("error"), Mapping):
        message = str(body["error"].get("message") or "")
    where = f"HTTP {status}" if status else "an error"
    return _Result(None, f"{where} for this request in its batch: {_short(message)}",
                   status in PASSING_STATUS or (status is None and not error), seconds,
                   status if isinstance(status, int) else None)


def _ended_reason(data: Mapping[str, Any]) -> str:
    status = data.get("status")
    batch = data.get("batch_id")
    if status == "expired":
        return (f"batch {batch} expired before answering this request (its 24 h window ran "
                f"out); run again to submit it anew")
    if status == "cancelled":
        return f"batch {batch} was cancelled before answering this request; run again to " \
               f"submit it anew"
    errors = "; ".join(f"{e.get('code')}: {e.get('message')}"
                       + (f" (line {e['line']})" if e.get("line") else "")
                       for e in data.get("errors") or []) or "no reason given"
    return f"batch {batch} failed: {errors}; run again to submit it anew"


def _minutes(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"
