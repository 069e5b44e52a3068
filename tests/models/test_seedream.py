"""The seedream backend against a local server that speaks BytePlus ModelArk's API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pytest_imagetime.backends.registry import MODELS
from pytest_imagetime.cases.model import Case
from pytest_imagetime.models.base import GenerationRequest, ModelError, ModelOptions
from pytest_imagetime.models.seedream import DEFAULT_MODEL, SEED_NOTE, SeedreamModel
from tests.builders import case_dict, write_case_file
from tests.fake_hosted import HostedServer, HostedState, hosted_server
from tests.fake_seedream import ROUTE, SENSITIVE_MESSAGE, SeedreamHandler

KEY = "ark-0123456789abcdef-SECRET"
SIZE = 128


@pytest.fixture
def server() -> Iterator[HostedServer]:
    with hosted_server(SeedreamHandler, HostedState(required_key=KEY)) as running:
        yield running


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ARK_API_KEY", KEY)
    return KEY


def _model(server: HostedServer, argument: str | None = f"api_size={SIZE}x{SIZE}",
           **options: Any) -> SeedreamModel:
    values: dict[str, Any] = {"base_url": f"{server.url}/api/v3", "retries": 1,
                              "timeout_s": 5.0}
    values.update(options)
    return SeedreamModel(argument, options=ModelOptions(**values))


def _request(case: Case) -> GenerationRequest:
    return GenerationRequest(case=case, setting="prompt-only", size=SIZE, seed=1234)


def test_a_generation_round_trip(server: HostedServer, key: str, case: Case) -> None:
    generated = _model(server).generate(request=_request(case))
    (sent,) = server.state.requests
    assert server.state.paths == [ROUTE]
    assert sent == {"model": DEFAULT_MODEL, "prompt": case.prompt, "size": f"{SIZE}x{SIZE}",
                    "response_format": "b64_json", "output_format": "png",
                    "sequential_image_generation": "disabled", "watermark": False,
                    "stream": False}
    assert server.state.headers[0]["authorization"] == f"Bearer {KEY}"
    assert generated.image.size == (SIZE, SIZE) and generated.data is not None
    details = generated.details
    assert details["model"] == DEFAULT_MODEL and details["returned_size"] == [SIZE, SIZE]
    assert details["seed"] == 1234 and not details["seed_sent"]
    assert details["seed_note"] == SEED_NOTE
    assert details["usage"]["generated_images"] == 1 and details["request_id"] == "0217-req"
    assert details["cost_usd"] == pytest.approx(0.035)
    assert details["delivery"] == "b64_json" and details["images_returned"] == 1
    json.dumps(details)


def test_the_seed_and_a_url_answer_when_asked(server: HostedServer, key: str,
                                              case: Case) -> None:
    model = _model(server, f"api_size={SIZE}x{SIZE},send_seed=true,response_format=url")
    generated = model.generate(request=_request(case))
    assert server.state.requests[0]["seed"] == 1234 and generated.details["seed_sent"]
    assert generated.details["delivery"] == "url" and generated.image.size == (SIZE, SIZE)
    # The signed URL is fetched without the key.
    assert "authorization" not in server.state.get_headers[0]


def test_the_default_size_is_the_2k_square(key: str) -> None:
    model = SeedreamModel(None, options=ModelOptions(calls=False))
    assert model.name == "seedream" and model.model == DEFAULT_MODEL
    assert model.config() == {"backend": "seedream", "model": DEFAULT_MODEL,
                              "base_url": "https://ark.ap-southeast.bytepluses.com/api/v3",
                              "overrides": {}}


def test_specs_and_bad_overrides(key: str) -> None:
    built = MODELS.create("seedream:seedream-4-5-251128:api_size=2K")
    assert isinstance(built, SeedreamModel)
    assert built.model == "seedream-4-5-251128" and built.overrides == {"api_size": "2K"}
    with pytest.raises(ValueError, match=r"unknown override 'steps'; accepted: api_size"):
        SeedreamModel("steps=4")
    with pytest.raises(ValueError, match=r"api_size='big': give WIDTHxHEIGHT"):
        SeedreamModel("api_size=big")


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARK_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"environment variable ARK_API_KEY.*"
                                         r"--imagetime-model-key-env"):
        SeedreamModel(None)


def test_a_named_key_variable_wins(server: HostedServer, case: Case,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARK_API_KEY", raising=False)
    monkeypatch.setenv("MY_ARK_KEY", KEY)
    _model(server, key_env="MY_ARK_KEY").generate(request=_request(case))
    assert server.state.headers[0]["authorization"] == f"Bearer {KEY}"


def test_a_rejected_key_stops_every_later_call(server: HostedServer, case: Case,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARK_API_KEY", "ark-wrong-key-0123456789")
    model = _model(server, retries=3)
    with pytest.raises(ModelError, match=r"HTTP 401 from the Seedream endpoint: The API key"):
        model.generate(request=_request(case))
    with pytest.raises(ModelError, match=r"not called: .*Check the key in ARK_API_KEY") as info:
        model.generate(request=_request(case))
    assert len(server.state.requests) == 1  # never retried, never sent again
    assert "ark-wrong-key-0123456789" not in str(info.value)


def test_transport_faults_are_retried(server: HostedServer, key: str, case: Case) -> None:
    server.state.fault_queue = ["429", "500"]
    generated = _model(server, retries=2).generate(request=_request(case))
    assert server.state.faults_served == {"429": 1, "500": 1}
    assert len(server.state.requests) == 3 and generated.details["images_returned"] == 1


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("429", "HTTP 429 from the Seedream endpoint: server error 429"),
        ("503", "HTTP 503 from the Seedream endpoint"),
        ("timeout", "the Seedream endpoint timed out (0.3 s a request)"),
        ("reset", "cannot reach the Seedream endpoint http://127.0.0.1:"),
        ("malformed", "the Seedream endpoint's response is not valid JSON"),
        ("input_sensitive", "the Seedream endpoint refused the prompt (content policy, "
                            f"InputTextSensitiveContentDetected BadRequest): {SENSITIVE_MESSAGE}"),
        ("output_sensitive", "refused the prompt (content policy, "
                             "OutputImageSensitiveContentDetected"),
        ("item_error", "the Seedream endpoint refused the image (content policy, "
                       "OutputImageSensitiveContentDetected)"),
        ("no_data", "the Seedream endpoint answered without image data"),
        ("quota", "HTTP 429 from the Seedream endpoint: Your account has reached its quota"),
        ("bad_b64", "the endpoint returned invalid base64 image data"),
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


@pytest.mark.parametrize("fault", ["input_sensitive", "quota"])
def test_refusals_and_a_spent_quota_are_never_asked_again(
        server: HostedServer, key: str, case: Case, fault: str) -> None:
    server.state.fault_queue = [fault]
    with pytest.raises(ModelError):
        _model(server, retries=3).generate(request=_request(case))
    assert len(server.state.requests) == 1


def test_concurrent_requests(server: HostedServer, key: str, case: Case) -> None:
    server.state.latency_s = 0.3
    model = _model(server, concurrency=4)
    assert model.concurrency == 4
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: model.generate(request=_request(case)), range(4)))
    assert len(results) == 4 and server.state.max_in_flight > 1


def test_a_run_with_a_rejected_key_sends_one_request(pytester: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with hosted_server(SeedreamHandler, HostedState(required_key=KEY)) as running:
        monkeypatch.setenv("ARK_API_KEY", "ark-wrong-key-0123456789")
        write_case_file(pytester.path / "k.yaml",
                        [case_dict(), case_dict("kitchen-pour-water-2")])
        result = pytester.runpytest_subprocess(
            "k.yaml", "--imagetime-model=seedream:api_size=128x128", "--imagetime-judge=pixel",
            f"--imagetime-size={SIZE}", f"--imagetime-model-base-url={running.url}/api/v3")
        sent = len(running.state.requests)
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors", outcomes.get("error", 0)) == 2, result.stdout.str()
    assert sent == 1
    result.stdout.fnmatch_lines(["*Check the key in ARK_API_KEY*"])
    assert "ark-wrong-key-0123456789" not in result.stdout.str()
