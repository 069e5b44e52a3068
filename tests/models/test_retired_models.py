"""A model id its provider no longer serves (or a misspelt one) stops the backend at its first
answer, with the provider's words and where to name another model: every later call would
meet the same 404, and a run of 750 items must not send 750 of them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from pytest_imagetime.cases.model import Case
from pytest_imagetime.models.base import GenerationRequest, ImageModel, ModelError, ModelOptions
from pytest_imagetime.models.bfl import BflModel
from pytest_imagetime.models.gemini_images import GeminiImageModel
from pytest_imagetime.models.seedream import SeedreamModel
from tests.builders import case_dict, write_case_file
from tests.fake_bfl import BflHandler
from tests.fake_gemini import GeminiHandler
from tests.fake_hosted import HostedHandler, HostedServer, HostedState, hosted_server
from tests.fake_seedream import SeedreamHandler

KEY = "key-0123456789abcdef-SECRET"
SIZE = 128
Build = Callable[[HostedServer, ModelOptions], ImageModel]


def _gemini(server: HostedServer, options: ModelOptions) -> ImageModel:
    return GeminiImageModel("image_size=512", options=options)


def _seedream(server: HostedServer, options: ModelOptions) -> ImageModel:
    return SeedreamModel(f"api_size={SIZE}x{SIZE}", options=ModelOptions(
        **{**options.__dict__, "base_url": f"{server.url}/api/v3"}))


def _bfl(server: HostedServer, options: ModelOptions) -> ImageModel:
    return BflModel(None, options=options)


# backend, its local server, its key variable, the provider's words, the spec to name another
BACKENDS: dict[str, tuple[type[HostedHandler], str, Build, str, str]] = {
    "gemini-image": (GeminiHandler, "GEMINI_API_KEY", _gemini,
                     r"models/gemini-3\.1-flash-image-preview is not found for API version",
                     "gemini-image:MODEL"),
    "seedream": (SeedreamHandler, "ARK_API_KEY", _seedream,
                 r"The model or endpoint seedream-5-0-260128 does not exist",
                 "seedream:MODEL"),
    "bfl": (BflHandler, "BFL_API_KEY", _bfl, r"HTTP 404 from .*Not Found", "bfl:MODEL"),
}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
            ) -> Iterator[tuple[str, HostedServer]]:
    name = request.param
    handler, key_env, _build, _words, _spec = BACKENDS[name]
    for variable in ("GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv(key_env, KEY)
    # The provider still serves other models, not the preset's default.
    with hosted_server(handler, HostedState(required_key=KEY,
                                            served_models={"some-other-model"})) as running:
        yield name, running


def _generate(model: ImageModel, case: Case) -> Any:
    return model.generate(request=GenerationRequest(case=case, setting="prompt-only",
                                                    size=SIZE, seed=1))


def test_a_retired_model_is_asked_once_and_named(backend: tuple[str, HostedServer],
                                                 case: Case) -> None:
    name, server = backend
    _handler, _key_env, build, words, spec = BACKENDS[name]
    model = build(server, ModelOptions(base_url=server.url, retries=2, timeout_s=5.0))
    messages = []
    for _ in range(3):
        with pytest.raises(ModelError) as info:
            _generate(model, case)
        messages.append(str(info.value))
    assert all(message.startswith("not called: ") for message in messages[1:])
    for message in messages:
        assert re.search(words, message), message
        assert f"the model in {spec}" in message
        assert KEY not in message
    # One answer of the provider was enough: no retries of a 404, no second request.
    assert len(server.state.paths) == 1, server.state.paths


def test_a_retired_model_in_a_run_is_one_request_and_item_errors(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARK_API_KEY", KEY)
    with hosted_server(SeedreamHandler, HostedState(required_key=KEY,
                                                    served_models={"other"})) as server:
        write_case_file(pytester.path / "k.yaml", [
            case_dict(f"kitchen-pour-water-{n}", variant=n % 2 + 1) for n in range(1, 5)])
        result = pytester.runpytest(
            "k.yaml", f"--imagetime-model=seedream:api_size={SIZE}x{SIZE}",
            f"--imagetime-model-base-url={server.url}/api/v3", "--imagetime-judge=pixel",
            f"--imagetime-size={SIZE}", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=4)
    result.stdout.fnmatch_lines(["*seedream-5-0-260128 does not exist*",
                                 "*Check the model name (the model in seedream:MODEL)*"])
    assert len(server.state.requests) == 1


def test_concurrent_first_calls_after_a_check_that_told_nothing_wait_for_the_first(
        monkeypatch: pytest.MonkeyPatch, case: Case) -> None:
    """Gemini's check (GET the model) meets the 404 too, and leaves it to the calls: the
    first call is then the check, and the backend's other threads wait for its answer."""
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    with hosted_server(GeminiHandler, HostedState(required_key=KEY,
                                                  served_models={"other"})) as server:
        model = _gemini(server, ModelOptions(base_url=server.url, retries=1, timeout_s=5.0))
        with ThreadPoolExecutor(max_workers=4) as pool:
            errors = list(pool.map(lambda _: _failure(model, case), range(4)))
    assert len(server.state.paths) == 1
    assert sum(e.startswith("not called: ") for e in errors) == 3


def _failure(model: ImageModel, case: Case) -> str:
    with pytest.raises(ModelError) as info:
        _generate(model, case)
    return str(info.value)
