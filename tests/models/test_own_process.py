"""Drawing in a process of its own (``--imagetime-model-process``): real child processes,
then whole runs through pytester."""

from __future__ import annotations

import functools
import json
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from pytest_imagetime.backends.registry import MODELS
from pytest_imagetime.models.base import (
    GenerationRequest,
    ModelError,
    ModelOptions,
    adapt_model,
)
from pytest_imagetime.models.diffusers_backend import forget_pipelines
from pytest_imagetime.models.own_process import (
    OwnProcessModel,
    factory_of,
    may_draw_in_own_process,
)
from pytest_imagetime.models.procedural import ProceduralModel
from tests import own_process_backends as backends
from tests.builders import case_dict, make_case, write_case_file
from tests.tiny_pipelines import save_pipeline

# ---------------------------------------------------------------- one model, real children


def _request(action: str = backends.DRAW, seed: int = 1) -> GenerationRequest:
    return GenerationRequest(make_case(), "prompt-only", 64, seed, prompt=action)


def _alive(pid: int) -> bool:
    """Whether a process with this id exists (a joined child is reaped, so it does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _children() -> set[int]:
    return {int(p.pid) for p in multiprocessing.active_children() if p.pid is not None}


@pytest.fixture(scope="module")
def procedural_in_child() -> Iterator[OwnProcessModel]:
    options = ModelOptions()
    model = OwnProcessModel(factory_of(MODELS, "procedural", options),
                            MODELS.create("procedural", options=options), "on")
    yield model
    model.close()


@pytest.fixture(scope="module")
def child() -> Iterator[OwnProcessModel]:
    """A batching test backend drawing in a child; shared by the tests of its failures."""
    model = OwnProcessModel(functools.partial(backends.BatchChildBackend),
                            backends.BatchChildBackend(), "on")
    yield model
    model.close()


def test_procedural_sheets_from_the_child_equal_those_drawn_here(
        procedural_in_child: OwnProcessModel) -> None:
    here = ProceduralModel()
    case = make_case()
    scaffold = here.generate(request=GenerationRequest(case, "scaffold", 96, 4)).image
    requests = [
        GenerationRequest(case, "prompt-only", 64, 1),
        GenerationRequest(case, "prompt-only", 64, 2),
        GenerationRequest(make_case("kitchen-pour-water-2"), "prompt-only", 128, 1),
        GenerationRequest(case, "prompt-only", 64, 1, kind="reference"),
        GenerationRequest(case, "prompt-only", 128, 1, grid=(4, 2)),
        GenerationRequest(case, "scaffold", 96, 4, reference=scaffold, scaffold=scaffold),
    ]
    assert procedural_in_child.in_own_process
    for request in requests:
        drawn = procedural_in_child.generate(request=request)
        expected = here.generate(request=request)
        assert drawn.image.size == expected.image.size == (request.size, request.size)
        assert drawn.image.mode == expected.image.mode
        assert np.array_equal(np.asarray(drawn.image), np.asarray(expected.image))
        assert dict(drawn.details) == dict(expected.details)
    # Different requests gave different sheets: the equality above is not of blank images.
    first, second = (np.asarray(procedural_in_child.generate(request=r).image)
                     for r in requests[:2])
    assert not np.array_equal(first, second)
    pid = procedural_in_child.drawing_pid
    assert pid is not None and pid != os.getpid()
    # Name and config are the backend's own, answered here.
    assert procedural_in_child.name == "procedural"
    assert procedural_in_child.config() == here.config()


def test_generate_batch_is_offered_only_where_the_backend_batches(
        procedural_in_child: OwnProcessModel, child: OwnProcessModel) -> None:
    assert not procedural_in_child.supports_batch
    single = OwnProcessModel(functools.partial(backends.ChildBackend),
                             backends.ChildBackend(), "on")
    assert not single.supports_batch
    single.close()
    assert single.drawing_pid is None
    assert child.supports_batch
    drawn = child.generate_batch(requests=[_request(seed=5), _request(seed=6), _request(seed=7)])
    assert [g.details["seed"] for g in drawn] == [5, 6, 7]
    assert {g.details["pid"] for g in drawn} == {child.drawing_pid}
    assert child.drawing_pid != os.getpid()
    assert [g.image.getpixel((0, 0)) for g in drawn] == [(5, 0, 0), (6, 0, 0), (7, 0, 0)]


def test_drawings_are_made_in_one_child_that_reports_its_pid(child: OwnProcessModel) -> None:
    first = child.generate(request=_request(seed=11))
    pid = child.drawing_pid
    assert pid is not None
    assert first.details["pid"] == pid != os.getpid()
    assert pid in _children() and _alive(pid)
    second = child.generate(request=_request(seed=12))
    assert second.details == {"pid": pid, "seed": 12}  # the same child, kept between calls
    assert child.drawing_pid == pid
    assert isinstance(second.image, Image.Image) and second.image.size == (64, 64)


def test_a_model_error_in_the_child_comes_back_with_its_message(child: OwnProcessModel) -> None:
    pid = child.generate(request=_request()).details["pid"]
    with pytest.raises(ModelError) as raised:
        child.generate(request=_request(backends.MODEL_ERROR))
    assert str(raised.value) == backends.MODEL_ERROR_TEXT
    # A failed drawing leaves the child as it was.
    assert child.generate(request=_request()).details["pid"] == pid == child.drawing_pid


def test_any_other_exception_comes_back_as_a_model_error_with_type_and_line(
        child: OwnProcessModel) -> None:
    source = Path(backends.__file__).read_text().splitlines()
    line = next(n for n, text in enumerate(source, 1)
                if "raise RuntimeError(OTHER_ERROR_TEXT)" in text)
    pid = child.generate(request=_request()).details["pid"]
    with pytest.raises(ModelError) as raised:
        child.generate(request=_request(backends.OTHER_ERROR))
    assert str(raised.value) == (f"RuntimeError: {backends.OTHER_ERROR_TEXT} "
                                 f"(at own_process_backends.py:{line})")
    # In a batch, the failure of one request fails the call, in the same words.
    with pytest.raises(ModelError) as batch_raised:
        child.generate_batch(requests=[_request(), _request(backends.OTHER_ERROR)])
    assert str(batch_raised.value) == str(raised.value)
    assert child.generate(request=_request()).details["pid"] == pid


def test_an_answer_that_cannot_be_pickled_comes_back_as_a_model_error(
        child: OwnProcessModel) -> None:
    pid = child.generate(request=_request()).details["pid"]
    with pytest.raises(ModelError, match="cannot be sent back") as raised:
        child.generate(request=_request(backends.UNPICKLABLE))
    assert "lock" in str(raised.value)
    # The pipe stays in step: the next call gets its own answer, from the same child.
    after = child.generate(request=_request(seed=21))
    assert after.details == {"pid": pid, "seed": 21}


def test_an_answer_that_cannot_be_read_here_comes_back_as_a_model_error(
        child: OwnProcessModel) -> None:
    pid = child.generate(request=_request()).details["pid"]
    with pytest.raises(ModelError, match="cannot be read here: RuntimeError: this answer "
                                         "cannot be rebuilt here"):
        child.generate(request=_request(backends.UNREADABLE))
    assert child.generate(request=_request(seed=22)).details == {"pid": pid, "seed": 22}


def test_a_request_that_cannot_be_sent_is_a_model_error(child: OwnProcessModel) -> None:
    pid = child.generate(request=_request()).details["pid"]
    request = GenerationRequest(make_case(), "prompt-only", 64, 1,
                                reference=threading.Lock())  # type: ignore[arg-type]
    with pytest.raises(ModelError, match="the request cannot be sent to the process drawing "
                                         "for child-test: TypeError: cannot pickle"):
        child.generate(request=request)
    assert child.generate(request=_request(seed=23)).details == {"pid": pid, "seed": 23}


def test_the_backend_may_start_processes_of_its_own(child: OwnProcessModel) -> None:
    drawn = child.generate(request=_request(backends.SPAWNS))
    assert drawn.details == {"pid": child.drawing_pid, "worker_exit": 0}


@pytest.mark.parametrize(("action", "status"), [(backends.EXIT, "exit code 3"),
                                                (backends.KILL, "killed by SIGKILL")])
def test_a_dying_child_fails_its_call_and_the_next_call_starts_another(
        child: OwnProcessModel, action: str, status: str) -> None:
    dead = child.generate(request=_request()).details["pid"]
    assert isinstance(dead, int)
    with pytest.raises(ModelError) as raised:
        child.generate(request=_request(action))
    message = str(raised.value)
    assert f"({status})" in message
    assert "child-test" in message and "the next drawing starts a new one" in message
    assert not _alive(dead) and dead not in _children()
    assert child.drawing_pid is None  # until the next drawing
    again = child.generate(request=_request(seed=31))
    assert again.details["seed"] == 31
    new = again.details["pid"]
    assert new == child.drawing_pid and new not in (dead, os.getpid())
    assert _alive(new)
    batch = child.generate_batch(requests=[_request(seed=32)])
    assert batch[0].details == {"pid": new, "seed": 32}


def _dead(pid: int) -> bool:
    """Ended, whether or not its parent has reaped it yet: every thread gone (a zombie whose
    other threads are still exiting keeps its pipe open), its status left uncollected."""
    try:
        ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True  # reaped already
    return ended is not None


@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "not-yet-reaped"])
def test_a_child_that_died_between_drawings_is_replaced_by_the_next(
        child: OwnProcessModel, reaped: bool) -> None:
    dead = child.generate(request=_request()).details["pid"]
    assert isinstance(dead, int)
    os.kill(dead, signal.SIGKILL)
    deadline = time.monotonic() + 10
    # Reaped: multiprocessing has seen it go. Not yet: the request is written to a pipe
    # nobody reads, and the model learns of the death only then.
    while dead in _children() if reaped else not _dead(dead):
        assert time.monotonic() < deadline, "the killed child did not end"
        time.sleep(0.01)
    again = child.generate(request=_request(seed=51))
    assert again.details["seed"] == 51
    assert again.details["pid"] == child.drawing_pid not in (dead, os.getpid())


def test_ctrl_c_does_not_end_the_child(child: OwnProcessModel) -> None:
    pid = child.generate(request=_request()).details["pid"]
    assert isinstance(pid, int)
    os.kill(pid, signal.SIGINT)  # what a Ctrl-C sends to the whole process group
    assert child.generate(request=_request(seed=52)).details == {"pid": pid, "seed": 52}
    assert _alive(pid)


def test_close_ends_the_child() -> None:
    model = OwnProcessModel(functools.partial(backends.ChildBackend),
                            backends.ChildBackend(), "on")
    pid = model.generate(request=_request()).details["pid"]
    assert isinstance(pid, int) and pid == model.drawing_pid
    assert _alive(pid) and pid in _children()
    model.close()
    assert model.drawing_pid is None
    assert not _alive(pid) and pid not in _children()
    model.close()  # a second close has nothing left to end
    assert model.drawing_pid is None


# ---------------------------------------------------------------- drawing ahead


@pytest.fixture
def logged_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                 ) -> Iterator[tuple[OwnProcessModel, Path]]:
    """A batching test backend in a child of its own that logs every drawing."""
    log = tmp_path / "draws.log"
    monkeypatch.setenv(backends.DRAW_LOG, str(log))  # the child is spawned with it
    model = OwnProcessModel(functools.partial(backends.BatchChildBackend),
                            backends.BatchChildBackend(), "on")
    yield model, log
    model.close()


def _drawn(log: Path) -> list[str]:
    """``seed action`` of each drawing the child finished, in order."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [line.rpartition(" ")[0] for line in lines if line.endswith(" end")]


def _ahead(*requests: GenerationRequest) -> list[tuple[str, dict[str, Any]]]:
    return [("generate", {"request": request}) for request in requests]


def test_calls_sent_ahead_are_drawn_once_before_they_are_asked_for(
        logged_child: tuple[OwnProcessModel, Path]) -> None:
    model, log = logged_child
    model.generate(request=_request(seed=1))  # starts the child
    assert model.draw_ahead(calls=_ahead(_request(seed=2), _request(seed=3)))
    assert model.draw_ahead(calls=_ahead(_request(seed=3)))  # queued already: not sent again
    deadline = time.monotonic() + 30
    while len(_drawn(log)) < 3:  # drawn without being asked for
        assert time.monotonic() < deadline, f"the child did not draw ahead: {_drawn(log)}"
        time.sleep(0.01)
    assert model.generate(request=_request(seed=2)).details["seed"] == 2
    assert model.generate(request=_request(seed=3)).details["seed"] == 3
    assert model.generate(request=_request(seed=4)).details["seed"] == 4
    assert _drawn(log) == ["1 draw", "2 draw", "3 draw", "4 draw"]


def test_nothing_goes_ahead_before_the_first_drawing_or_when_drawing_here(
        tmp_path: Path, logged_child: tuple[OwnProcessModel, Path]) -> None:
    model, log = logged_child
    assert not model.draw_ahead(calls=_ahead(_request(seed=2)))
    assert model.drawing_pid is None  # sending ahead never starts a child
    here = OwnProcessModel(functools.partial(backends.ChildBackend),
                           backends.ChildBackend(on_gpu=False), "auto")
    assert not here.draw_ahead(calls=_ahead(_request(seed=2)))
    assert here.drawing_pid is None
    assert here.generate(request=_request(seed=2)).details["pid"] == os.getpid()
    assert _drawn(log) == ["2 draw"]  # the local backend's drawing, in this process


def test_calls_behind_one_that_cannot_go_ahead_are_not_sent(
        logged_child: tuple[OwnProcessModel, Path]) -> None:
    model, log = logged_child
    model.generate(request=_request(seed=1))
    unpicklable = GenerationRequest(make_case(), "prompt-only", 64, 2, prompt=backends.DRAW,
                                    scaffold=threading.Lock())  # type: ignore[arg-type]
    assert not model.draw_ahead(calls=_ahead(unpicklable, _request(seed=3)))
    assert model.generate(request=_request(seed=4)).details["seed"] == 4
    assert _drawn(log) == ["1 draw", "4 draw"]  # seed 3 never went: it would come first


def test_an_answer_no_call_asks_for_is_dropped(
        logged_child: tuple[OwnProcessModel, Path]) -> None:
    model, log = logged_child
    model.generate(request=_request(seed=1))
    model.draw_ahead(calls=_ahead(_request(seed=2), _request(backends.MODEL_ERROR, seed=3)))
    drawn = model.generate(request=_request(seed=5))  # neither: both answers go
    assert drawn.details["seed"] == 5
    assert model.generate(request=_request(seed=6)).details["seed"] == 6
    assert _drawn(log) == ["1 draw", "2 draw", f"3 {backends.MODEL_ERROR}", "5 draw", "6 draw"]


def test_a_batch_sent_ahead_answers_its_batch_call(
        logged_child: tuple[OwnProcessModel, Path]) -> None:
    model, log = logged_child
    model.generate(request=_request(seed=1))
    requests = [_request(seed=2), _request(seed=3)]
    model.draw_ahead(calls=[("generate_batch", {"requests": requests})])
    assert [d.details["seed"] for d in model.generate_batch(requests=requests)] == [2, 3]
    assert _drawn(log) == ["1 draw", "2 draw", "3 draw"]


def test_a_child_that_dies_on_a_call_sent_ahead_fails_that_call(
        logged_child: tuple[OwnProcessModel, Path]) -> None:
    model, _ = logged_child
    dead = model.generate(request=_request(seed=1)).details["pid"]
    kill = _request(backends.KILL, seed=2)
    model.draw_ahead(calls=_ahead(kill))
    with pytest.raises(ModelError, match=r"killed by SIGKILL"):
        model.generate(request=kill)
    again = model.generate(request=_request(seed=3)).details
    assert again["seed"] == 3 and again["pid"] not in (dead, None)


def test_a_call_queued_behind_the_one_that_killed_the_child_goes_to_a_new_one(
        logged_child: tuple[OwnProcessModel, Path]) -> None:
    model, log = logged_child
    dead = model.generate(request=_request(seed=1)).details["pid"]
    model.draw_ahead(calls=_ahead(_request(backends.KILL, seed=2), _request(seed=3)))
    drawn = model.generate(request=_request(seed=3))  # the child never started it
    assert drawn.details["seed"] == 3 and drawn.details["pid"] != dead
    assert _drawn(log) == ["1 draw", "3 draw"]


def test_close_ends_a_child_drawing_ahead_without_waiting_for_its_drawings(
        logged_child: tuple[OwnProcessModel, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_imagetime.models import own_process

    model, log = logged_child
    monkeypatch.setattr(own_process, "JOIN_TIMEOUT_S", 60.0)  # a wait would show
    model.generate(request=_request(seed=1))
    process = model._child._process
    model.draw_ahead(calls=_ahead(_request(backends.SLOW, seed=2)))
    deadline = time.monotonic() + 30
    while f"2 {backends.SLOW} start" not in log.read_text():
        assert time.monotonic() < deadline, "the child did not start the drawing ahead"
        time.sleep(0.01)
    model.close()
    assert process.exitcode == -signal.SIGTERM  # ended, not asked to finish and stop
    assert _drawn(log) == ["1 draw"]


@pytest.mark.parametrize("count", [1, 3])
def test_the_planned_calls_are_the_calls_draw_sheets_makes(
        tmp_path: Path, logged_child: tuple[OwnProcessModel, Path], count: int) -> None:
    """Sent ahead, they answer draw_sheets without a drawing more: one generate for one
    case, one generate_batch for several; a stored sheet makes no call."""
    from pytest_imagetime.engine.run_spec import RunSpec
    from pytest_imagetime.engine.runner import (
        Drawn,
        case_seed,
        draw_sheets,
        planned_calls,
        store_sheet,
    )
    from pytest_imagetime.judges.pixel import PixelJudge
    from pytest_imagetime.sheet.prompts import sheet_prompt
    from pytest_imagetime.store.paths import RunPaths

    model, log = logged_child
    judge = PixelJudge()
    spec = RunSpec(model=model, judge=judge, setting="prompt-only", size=64, run_seed=0,
                   paths=RunPaths(tmp_path / "out", model.name, judge.name, "prompt-only"))
    first, *cases = [make_case(f"kitchen-pour-water-{n}") for n in range(count + 1)]
    model.generate(request=_request(seed=1))  # the child runs
    calls = planned_calls(spec, cases)
    assert [method for method, _ in calls] == ["generate" if count == 1 else "generate_batch"]
    model.draw_ahead(calls=calls)
    drawn = draw_sheets(spec, cases)
    assert len(_drawn(log)) == 1 + count  # each case once: every answer was taken
    for drawing in drawn:
        assert isinstance(drawing, Drawn)
        store_sheet(spec, drawing)
    assert planned_calls(spec, cases) == []  # stored: nothing to draw
    assert planned_calls(spec, [first, *cases]) == _ahead(
        GenerationRequest(first, "prompt-only", 64, case_seed(0, first.id),
                          prompt=sheet_prompt(first, False, (2, 2))))


def test_a_model_never_asked_to_draw_starts_no_child() -> None:
    before = _children()
    model = OwnProcessModel(functools.partial(backends.BatchChildBackend),
                            backends.BatchChildBackend(), "on")
    assert model.in_own_process
    assert model.name == "child-test" and model.config() == {"backend": "child-test"}
    assert callable(getattr(model, "generate_batch", None))
    assert model.drawing_pid is None
    model.close()
    assert model.drawing_pid is None
    assert _children() == before


def test_auto_draws_here_when_the_backend_does_not_draw_on_a_gpu() -> None:
    before = _children()
    local = backends.BatchChildBackend(on_gpu=False)
    model = OwnProcessModel(functools.partial(backends.BatchChildBackend, on_gpu=False),
                            local, "auto")
    assert not model.in_own_process
    assert model.generate(request=_request(seed=41)).details == {"pid": os.getpid(), "seed": 41}
    batch = model.generate_batch(requests=[_request(seed=42), _request(seed=43)])
    assert [g.details for g in batch] == [{"pid": os.getpid(), "seed": 42},
                                          {"pid": os.getpid(), "seed": 43}]
    assert model.drawing_pid is None
    assert _children() == before
    model.close()
    on_gpu = OwnProcessModel(functools.partial(backends.ChildBackend),
                             backends.ChildBackend(on_gpu=True), "auto")
    assert on_gpu.in_own_process  # decided without starting a child
    assert on_gpu.drawing_pid is None
    on_gpu.close()


@pytest.mark.parametrize(("model", "choice", "expected"), [
    (ProceduralModel(), "on", True),
    (ProceduralModel(), "off", False),
    (ProceduralModel(), "auto", False),  # its type does not declare draws_on_gpu
    (backends.ChildBackend(on_gpu=True), "on", True),
    (backends.ChildBackend(on_gpu=True), "off", False),
    (backends.ChildBackend(on_gpu=True), "auto", True),
    # Declared, whatever it answers: the answer is read at the first drawing.
    (backends.ChildBackend(on_gpu=False), "auto", True),
    (backends.ChildBackend(on_gpu=False), "off", False),
], ids=["procedural-on", "procedural-off", "procedural-auto", "gpu-on", "gpu-off", "gpu-auto",
        "declared-cpu-auto", "declared-cpu-off"])
def test_may_draw_in_own_process(model: object, choice: str, expected: bool) -> None:
    # A third-party backend is adapted as the registry adapts it.
    assert may_draw_in_own_process(adapt_model(model, "under-test"), choice) is expected


def test_a_diffusers_pipeline_draws_in_the_child_what_it_draws_here(tmp_path: Path) -> None:
    spec = f"diffusers:{save_pipeline('sd', tmp_path / 'sd')}:steps=2"
    options = ModelOptions(devices=("cpu",))
    local = MODELS.create(spec, options=options)
    model = OwnProcessModel(factory_of(MODELS, spec, options), local, "on")
    request = GenerationRequest(make_case(), "prompt-only", 64, 7)
    try:
        drawn = [model.generate(request=request),
                 *model.generate_batch(requests=[request, request])]
        pid = model.drawing_pid
    finally:
        model.close()
    assert pid is not None and pid != os.getpid()
    try:
        here = np.asarray(local.generate(request=request).image, dtype=np.int16)
    finally:
        forget_pipelines()
    assert here.std() > 0  # a picture, not a blank
    for generated in drawn:
        assert generated.details["device"] == "cpu"
        assert np.abs(np.asarray(generated.image, dtype=np.int16) - here).max() <= 2


# ---------------------------------------------------------------- whole runs

# Each pytest process logs, for each run, the model it drew with and its child, at session
# finish (before the plugin closes the models) and whether that child is gone after it.
CHILD_LOG = """
import json
import os

import pytest

from pytest_imagetime.plugin.state import state_key


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session):
    runs = session.config.stash[state_key].runs.values()
    seen = [(type(run.model).__name__, getattr(run.model, "drawing_pid", None))
            for run in runs]
    result = yield
    with open({log!r}, "a") as log:
        for model, child in seen:
            log.write(json.dumps({{"process": os.getpid(), "model": model, "child": child,
                                   "gone": child is None or not _alive(child)}}) + "\\n")
    return result
"""


def _cases(pytester: pytest.Pytester, count: int) -> list[str]:
    cases = [case_dict(f"kitchen-pour-{liquid}-{variant}", concept=f"pour {liquid}",
                       variant=variant)
             for liquid in ("water", "milk") for variant in (1, 2)][:count]
    write_case_file(pytester.path / "kitchen.yaml", cases)
    pytester.makeconftest(CHILD_LOG.format(log=str(pytester.path / "children.jsonl")))
    return sorted(str(case["id"]) for case in cases)


def _run(pytester: pytest.Pytester, out: str, *extra: str) -> list[dict[str, Any]]:
    """A procedural run into ``out``; what CHILD_LOG logged for it."""
    log = pytester.path / "children.jsonl"
    log.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess(
        "kitchen.yaml", "--imagetime-model=procedural", "--imagetime-judge=pixel",
        "--imagetime-size=128", f"--imagetime-out={out}", *extra)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return [json.loads(line) for line in log.read_text().splitlines()]


def _digests(pytester: pytest.Pytester, out: str) -> dict[str, str]:
    """Each case's stored sheet digest, once its pixel facts and its judgment are checked to
    be those of the ``off`` run (made in the measuring processes under ``on``)."""
    records = [json.loads(p.read_text())
               for p in sorted((pytester.path / out).rglob("images/*.json"))]
    judgments = _judged(pytester, out)
    if out != "off":
        facts = {str(r["case_id"]): r["pixel_metrics"] for r in records}
        assert facts == {k: v["pixel_metrics"] for k, v in _records(pytester, "off").items()}
        assert judgments == _judged(pytester, "off")
    assert len(judgments) == len(records)
    return {str(r["case_id"]): str(r["image_sha256"]) for r in records}


def _judged(pytester: pytest.Pytester, out: str) -> dict[str, Any]:
    """Each judgment's scores, labels and measures (its date and latency differ between runs)."""
    judged = {p.stem: json.loads(p.read_text())["judgment"]
              for p in (pytester.path / out).rglob("judgments/*.json")}
    return {k: (j["scores"], j.get("labels"), j.get("raw")) for k, j in judged.items()}


def _records(pytester: pytest.Pytester, out: str) -> dict[str, dict[str, Any]]:
    return {str(r["case_id"]): r for r in (json.loads(p.read_text()) for p in
                                          (pytester.path / out).rglob("images/*.json"))}


def _drew_in_children(logged: list[dict[str, Any]]) -> list[int]:
    """The children that drew; every model was wrapped and every child is gone."""
    assert logged and all(e["model"] == "OwnProcessModel" for e in logged)
    assert all(e["gone"] for e in logged)
    children = [int(e["child"]) for e in logged if e["child"] is not None]
    assert all(e["child"] != e["process"] for e in logged)
    return children


def test_on_stores_the_images_off_stores_and_a_resume_starts_no_child(
        pytester: pytest.Pytester) -> None:
    ids = _cases(pytester, 3)
    off = _run(pytester, "off", "--imagetime-model-process=off")
    assert [e["model"] for e in off] == ["ProceduralModel"]
    on = _run(pytester, "on", "--imagetime-model-process=on")
    assert len(_drew_in_children(on)) == 1
    expected = _digests(pytester, "off")
    assert sorted(expected) == ids
    assert _digests(pytester, "on") == expected
    records = {p: p.read_bytes() for p in (pytester.path / "on").rglob("images/*")}
    # The finished run, resumed: every item is answered from the store, nothing is drawn.
    resumed = _run(pytester, "on", "--imagetime-model-process=on")
    assert _drew_in_children(resumed) == []
    assert {p: p.read_bytes() for p in (pytester.path / "on").rglob("images/*")} == records
    report = json.loads(next((pytester.path / "on").rglob("report.json")).read_text())
    assert len(report["items"]) == 3
    assert not any(item["generated"] for item in report["items"])


def test_on_under_xdist_stores_the_images_off_stores(pytester: pytest.Pytester) -> None:
    ids = _cases(pytester, 4)
    _run(pytester, "off", "--imagetime-model-process=off", "-n", "2")
    # The ini name, given with -o, chooses it as the option does.
    on = _run(pytester, "on", "-o", "imagetime_model_process=on", "-n", "2")
    children = _drew_in_children(on)
    assert children and len(set(children)) == len(children)
    workers = {e["process"] for e in on if e["child"] is not None}
    assert len(workers) == len(children)  # one child per worker that drew
    expected = _digests(pytester, "off")
    assert sorted(expected) == ids
    assert _digests(pytester, "on") == expected


@pytest.mark.parametrize("given", [["--imagetime-model-process=maybe"],
                                   ["-o", "imagetime_model_process=maybe"]])
def test_an_unknown_choice_is_a_usage_error(pytester: pytest.Pytester,
                                             given: list[str]) -> None:
    _cases(pytester, 1)
    result = pytester.runpytest("kitchen.yaml", "--imagetime-model=procedural",
                                "--imagetime-judge=pixel", *given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --imagetime-model-process=maybe: use one of "
                                 "auto, on, off"])
    assert not (pytester.path / "children.jsonl").exists()  # no session was started
