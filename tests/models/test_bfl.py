"""The bfl backend against a local server that speaks Black Forest Labs' API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.backends.registry import MODELS
from pytest_imagetime.cases.model import Case
from pytest_imagetime.models.base import GenerationRequest, ModelError, ModelOptions
from pytest_imagetime.models.bfl import DEFAULT_MODEL, BflModel
from pytest_imagetime.models.hosted import per_image_cost
from tests.builders import case_dict, write_case_file
from tests.fake_bfl import COST_CREDITS, MODERATION_REASONS, BflHandler
from tests.fake_hosted import HostedServer, HostedState, hosted_server

KEY = "bfl-0123456789abcdef-SECRET"
SIZE = 128


@pytest.fixture
def server() -> Iterator[HostedServer]:
    with hosted_server(BflHandler, HostedState(required_key=KEY)) as running:
        yield running


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("BFL_API_KEY", KEY)
    return KEY


def _model(server: HostedServer, argument: str | None = None, **options: Any) -> BflModel:
    values: dict[str, Any] = {"base_url": server.url, "retries": 1, "timeout_s": 5.0}
    values.update(options)
    return BflModel(argument, options=ModelOptions(**values))


def _request(case: Case) -> GenerationRequest:
    return GenerationRequest(case=case, setting="prompt-only", size=SIZE, seed=1234)


def test_a_task_round_trip(server: HostedServer, key: str, case: Case) -> None:
    generated = _model(server).generate(request=_request(case))
    (sent,) = server.state.requests
    assert server.state.paths == [f"/v1/{DEFAULT_MODEL}"]
    assert sent == {"prompt": case.prompt, "width": SIZE, "height": SIZE, "seed": 1234,
                    "safety_tolerance": 2, "output_format": "png",
                    "prompt_upsampling": False}
    assert server.state.headers[0]["x-key"] == KEY
    # The key is checked (free) before the first task; the task is polled until it is ready.
    assert server.state.gets[0] == "/v1/credits"
    polls = [g for g in server.state.gets if g.startswith("/v1/get_result")]
    assert len(polls) == 2
    # The signed image URL is fetched without the key.
    fetch = next(h for g, h in zip(server.state.gets, server.state.get_headers, strict=True)
                 if "/files/" in g)
    assert "x-key" not in fetch
    assert generated.image.size == (SIZE, SIZE)
    details = generated.details
    assert details["task_id"] == "task-0" and details["polls"] == 2
    assert details["seed_sent"] and details["reported_seed"] == 1234
    assert not details["prompt_upsampling"]
    assert details["credits"] == COST_CREDITS
    assert details["cost_usd"] == pytest.approx(COST_CREDITS * 0.01)
    json.dumps(details)


def test_specs_and_overrides(key: str) -> None:
    built = MODELS.create("bfl:flux-2-max:api_size=1024,safety_tolerance=1")
    assert isinstance(built, BflModel) and built.model == "flux-2-max"
    assert built.overrides == {"api_size": 1024, "safety_tolerance": 1}
    assert MODELS.create("bfl").model == DEFAULT_MODEL
    with pytest.raises(ValueError, match=r"api_size='100': give a side in pixels, a multiple"):
        BflModel("api_size=100")
    with pytest.raises(ValueError, match=r"api_size='big': give a side in pixels, a multiple"):
        BflModel("api_size=big")
    with pytest.raises(ValueError, match=r"safety_tolerance='strict': give an integer from 0"):
        BflModel("safety_tolerance=strict")


def test_a_regional_host_is_a_base_url(key: str) -> None:
    model = BflModel(None, options=ModelOptions(base_url="https://api.eu.bfl.ai", calls=False))
    assert model.config()["base_url"] == "https://api.eu.bfl.ai"


def test_a_rejected_key_stops_the_run_before_a_task(server: HostedServer, case: Case,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BFL_API_KEY", "bfl-wrong-0123456789")
    model = _model(server, retries=2)
    for _ in range(2):
        with pytest.raises(ModelError, match=r"not called: the BFL API failed once \(HTTP 403 "
                                             r"from the BFL API: Not authenticated.*Check the "
                                             r"key in BFL_API_KEY"):
            model.generate(request=_request(case))
    assert server.state.requests == [] and server.state.gets == ["/v1/credits"]


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("request_moderated", "BFL moderated the request (the prompt): "
                              + ", ".join(MODERATION_REASONS)),
        ("content_moderated", "BFL moderated the output image: NSFW"),
        ("task_error", "the BFL task task-0 ended with status 'Error': error: generation failed"),
        ("not_found", "ended with status 'Task not found'"),
        ("no_credits", "HTTP 402 from the BFL API: Insufficient credits"),
        ("unprocessable", "HTTP 422 from the BFL API: "),
        ("429", "HTTP 429 from the BFL API: server error 429"),
        ("timeout", "the BFL API timed out (0.3 s a request)"),
        ("reset", "cannot reach the BFL API http://127.0.0.1:"),
        ("malformed", "the BFL API's response is not valid JSON"),
    ],
)
def test_each_failure_is_a_model_error_with_its_reason(
        server: HostedServer, key: str, case: Case, fault: str, reason: str) -> None:
    server.state.fault_queue = [fault]
    server.state.timeout_sleep_s = 1.0
    with pytest.raises(ModelError) as info:
        _model(server, retries=0, timeout_s=0.3).generate(request=_request(case))
    assert reason in str(info.value)
    assert KEY not in str(info.value)


def test_a_failed_poll_is_retried(server: HostedServer, key: str, case: Case) -> None:
    server.state.fault_queue = ["poll_500"]
    generated = _model(server, retries=1).generate(request=_request(case))
    assert generated.details["polls"] == 2 and len(server.state.requests) == 1


def test_a_moderated_task_is_never_asked_again(server: HostedServer, key: str,
                                               case: Case) -> None:
    server.state.fault_queue = ["request_moderated"]
    with pytest.raises(ModelError, match="moderated"):
        _model(server, retries=3).generate(request=_request(case))
    assert len(server.state.requests) == 1


def test_a_task_that_is_never_ready_times_out(server: HostedServer, key: str, case: Case,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BflHandler, "pending_polls", 10_000)
    with pytest.raises(ModelError, match=r"task-0 was not ready within 1 s"):
        _model(server, timeout_s=1.0).generate(request=_request(case))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_a_run_generates_through_the_plugin(pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch,
                                            workers: list[str]) -> None:
    with hosted_server(BflHandler, HostedState(required_key=KEY)) as running:
        monkeypatch.setenv("BFL_API_KEY", KEY)
        write_case_file(pytester.path / "k.yaml", [case_dict(), case_dict("kitchen-pour-water-2")])
        result = pytester.runpytest_subprocess(
            "k.yaml", *workers, "--imagetime-model=bfl", "--imagetime-judge=pixel",
            f"--imagetime-size={SIZE}", f"--imagetime-model-base-url={running.url}")
        submitted = list(running.state.requests)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 2, result.stdout.str()
    assert "errors" not in outcomes and "error" not in outcomes
    assert len(submitted) == 2 and {s["seed"] for s in submitted}
    images = pytester.path / "reports" / "bfl" / "images"
    record = json.loads((images / "kitchen-pour-water-1.json").read_text())
    assert Path(images / "kitchen-pour-water-1.png").is_file()
    assert record["model"] == "bfl" and record["model_config"]["model"] == DEFAULT_MODEL
    assert record["details"]["cost_usd"] == pytest.approx(COST_CREDITS * 0.01)
    assert KEY not in json.dumps(record)


def test_prices_by_image_and_by_megapixel() -> None:
    assert per_image_cost("flux-2-pro", 0.5) == {"cost_usd": 0.03}
    assert per_image_cost("flux-2-pro", 2.1) == {"cost_usd": pytest.approx(0.06)}
    assert per_image_cost("seedream-5-0-260128", 4.2) == {"cost_usd": 0.035}
    unknown = per_image_cost("flux-9-ultra", 1.0)
    assert unknown["cost_usd"] is None and "no price for 'flux-9-ultra'" in unknown["cost_note"]
