"""The gemini-image backend with the real google-genai client against a local server that
speaks the Gemini API (and Vertex AI's)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from pytest_imagetime.backends.registry import MODELS
from pytest_imagetime.cases.model import Case
from pytest_imagetime.models.base import GenerationRequest, ModelError, ModelOptions
from pytest_imagetime.models.gemini_images import DEFAULT_MODEL, GeminiImageModel
from tests.fake_gemini import (
    BLOCK_MESSAGE,
    IMAGE_TOKENS,
    THOUGHT_TOKENS,
    GeminiHandler,
    camel,
)
from tests.fake_hosted import HostedServer, HostedState, hosted_server

KEY = "AIza-0123456789abcdef-SECRET"
SIZE = 512


@pytest.fixture
def server() -> Iterator[HostedServer]:
    with hosted_server(GeminiHandler, HostedState(required_key=KEY)) as running:
        yield running


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    return KEY


def _model(server: HostedServer, argument: str | None = "image_size=512",
           **options: Any) -> GeminiImageModel:
    values: dict[str, Any] = {"base_url": server.url, "retries": 1, "timeout_s": 5.0}
    values.update(options)
    return GeminiImageModel(argument, options=ModelOptions(**values))


def _request(case: Case) -> GenerationRequest:
    return GenerationRequest(case=case, setting="prompt-only", size=SIZE, seed=1234)


def test_a_generation_round_trip(server: HostedServer, key: str, case: Case) -> None:
    generated = _model(server).generate(request=_request(case))
    (sent,) = server.state.requests
    # The SDK's API version (v1, v1beta) comes first.
    (path,) = server.state.paths
    assert path.endswith(f"/models/{DEFAULT_MODEL}:generateContent")
    assert server.state.gets == [path.partition(":")[0]]  # the model, checked first, free
    assert server.state.headers[0]["x-goog-api-key"] == KEY
    assert sent["contents"][0]["parts"] == [{"text": case.prompt}]
    assert camel(sent["generationConfig"]) == {
        "responseModalities": ["IMAGE"], "candidateCount": 1, "seed": 1234,
        "imageConfig": {"aspectRatio": "1:1", "imageSize": "512"},
        "thinkingConfig": {"thinkingLevel": "MINIMAL", "includeThoughts": False}}
    assert generated.image.size == (SIZE, SIZE) and generated.data is not None
    details = generated.details
    assert details["model"] == DEFAULT_MODEL and details["api"] == "gemini"
    assert details["seed_sent"] and details["thinking"] == "minimal"
    assert details["finish_reason"] == "STOP" and details["mime_type"] == "image/png"
    text = len(case.prompt) // 4
    assert details["tokens"] == {"text_input": text, "image_input": 0,
                                 "image_output": IMAGE_TOKENS, "text_output": THOUGHT_TOKENS}
    assert details["cost_usd"] == pytest.approx(
        (text * 0.5 + IMAGE_TOKENS * 60.0 + THOUGHT_TOKENS * 3.0) / 1e6)
    json.dumps(details)


def test_thinking_and_the_seed_can_be_left_out(server: HostedServer, key: str,
                                               case: Case) -> None:
    _model(server, "gemini-2.5-flash-image:thinking=none,send_seed=false,image_size=512"
           ).generate(request=_request(case))
    config = camel(server.state.requests[0]["generationConfig"])
    assert "thinkingConfig" not in config and "seed" not in config
    assert server.state.paths[0].endswith("/models/gemini-2.5-flash-image:generateContent")


def test_google_api_key_is_read_when_gemini_api_key_is_not_set(
        server: HostedServer, case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    _model(server).generate(request=_request(case))
    assert server.state.headers[0]["x-goog-api-key"] == KEY


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match=r"environment variable GEMINI_API_KEY or "
                                         r"GOOGLE_API_KEY \(or --imagetime-model-key-env"):
        GeminiImageModel(None)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("MY_KEY", raising=False)
    with pytest.raises(ValueError, match=r"environment variable MY_KEY \(or "):
        GeminiImageModel(None, options=ModelOptions(key_env="MY_KEY"))


def test_a_rejected_key_stops_the_run_before_a_request(
        server: HostedServer, case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-wrong-0123456789")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    model = _model(server, retries=2)
    for _ in range(2):
        with pytest.raises(ModelError, match=r"not called: the Gemini API failed once \(HTTP "
                                             r"400 from the Gemini API: API key not valid.*"
                                             r"Check the key in GEMINI_API_KEY") as info:
            model.generate(request=_request(case))
        assert "AIza-wrong-0123456789" not in str(info.value)
    assert server.state.requests == [] and len(server.state.gets) == 1


def test_specs(key: str) -> None:
    built = MODELS.create("gemini-image:gemini-3-pro-image-preview:image_size=2K")
    assert isinstance(built, GeminiImageModel)
    assert built.model == "gemini-3-pro-image-preview" and built.overrides == {
        "image_size": "2K"}
    assert MODELS.create("gemini-image").model == DEFAULT_MODEL
    with pytest.raises(ValueError, match=r"image_size='3K': use one of 512, 1K, 2K, 4K"):
        GeminiImageModel("image_size=3K")


def test_transport_faults_are_retried(server: HostedServer, key: str, case: Case) -> None:
    server.state.fault_queue = ["429", "503"]
    generated = _model(server, retries=2).generate(request=_request(case))
    assert server.state.faults_served == {"429": 1, "503": 1}
    assert len(server.state.requests) == 3 and generated.details["images_returned"] == 1


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("429", "HTTP 429 from the Gemini API: Resource has been exhausted"),
        ("500", "HTTP 500 from the Gemini API: An internal error has occurred."),
        ("timeout", "the Gemini API timed out (0.5 s a request)"),
        ("reset", "cannot reach the Gemini API http://127.0.0.1:"),
        ("malformed", "the Gemini API's response is not valid JSON"),
        ("prompt_blocked", "the Gemini API blocked the prompt (content policy, "
                           f"PROHIBITED_CONTENT): {BLOCK_MESSAGE}"),
        # The SDK drops the Gemini API's finishMessage: the finish reason is the reason.
        ("image_safety", "the Gemini API withheld the image (content policy, IMAGE_SAFETY)"),
        ("text_only", "the Gemini API answered without an image (finish reason STOP)"),
    ],
)
def test_each_failure_is_a_model_error_with_its_reason(
        server: HostedServer, key: str, case: Case, fault: str, reason: str) -> None:
    model = _model(server, retries=0, timeout_s=0.5)
    model.calls.ensure_checked()
    server.state.fault_queue = [fault]
    server.state.timeout_sleep_s = 1.5
    with pytest.raises(ModelError) as info:
        model.generate(request=_request(case))
    assert reason in str(info.value)
    assert KEY not in str(info.value)


@pytest.mark.parametrize("fault", ["prompt_blocked", "image_safety"])
def test_a_block_is_never_asked_again(server: HostedServer, key: str, case: Case,
                                      fault: str) -> None:
    server.state.fault_queue = [fault]
    with pytest.raises(ModelError, match="content policy"):
        _model(server, retries=3).generate(request=_request(case))
    assert len(server.state.requests) == 1


def test_concurrent_requests(server: HostedServer, key: str, case: Case) -> None:
    server.state.latency_s = 0.3
    model = _model(server, concurrency=4)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: model.generate(request=_request(case)), range(4)))
    assert len(results) == 4 and server.state.max_in_flight > 1


def test_vertex_ai_with_application_default_credentials(
        server: HostedServer, case: Case, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A service account's credentials, whose token comes from the local server.
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    adc = tmp_path / "adc.json"
    adc.write_text(json.dumps({"type": "service_account", "project_id": "my-project",
                               "private_key_id": "1", "private_key": pem,
                               "client_email": "runner@my-project.iam.gserviceaccount.com",
                               "client_id": "1", "token_uri": f"{server.url}/token"}))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(adc))
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    model = _model(server, "vertex=true,project=my-project,image_size=512")
    assert model.config()["api"] == "vertex"
    generated = model.generate(request=_request(case))
    path = server.state.paths[-1]
    assert path.endswith(f"/projects/my-project/locations/global/publishers/google/models/"
                         f"{DEFAULT_MODEL}:generateContent")
    assert generated.details["api"] == "vertex" and generated.image.size == (SIZE, SIZE)


def test_vertex_ai_without_credentials_is_refused_before_a_request(
        server: HostedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Nowhere that google.auth looks has credentials: no real gcloud or metadata server.
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path))
    monkeypatch.setenv("GCE_METADATA_HOST", "127.0.0.1:9")
    monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:9")
    with pytest.raises(ValueError, match=r"^the gemini-image model on Vertex AI needs Google "
                                         r"application default credentials, and none were "
                                         r"found \(File .*missing\.json was not found\.\): "
                                         r"run 'gcloud auth application-default login', or "
                                         r"set GOOGLE_APPLICATION_CREDENTIALS"):
        _model(server, "vertex=true,project=my-project")
    assert server.state.requests == [] and server.state.gets == []
    # A session that makes no calls does not look for them.
    assert GeminiImageModel("vertex=true,project=my-project",
                            options=ModelOptions(calls=False)).config()["api"] == "vertex"


def test_vertex_ai_needs_a_project(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    with pytest.raises(ValueError, match=r"needs a project: gemini-image:vertex=true"):
        GeminiImageModel("vertex=true")


def test_a_missing_sdk_says_how_to_install_it(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.genai", None)
    with pytest.raises(ImportError, match=r"the gemini-image model needs the google-genai "
                                          r"package: pip install 'pytest-imagetime\[gemini\]'"):
        GeminiImageModel(None)
    # A session that makes no calls needs neither the package nor a key.
    assert GeminiImageModel(None, options=ModelOptions(calls=False)).name == "gemini-image"
