"""The openai-images backend with the real openai client against a real local server."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.backends.registry import MODELS
from pytest_imagetime.cases.model import Case
from pytest_imagetime.models.base import GenerationRequest, ModelError, ModelOptions
from pytest_imagetime.models.openai_images import (
    DEFAULT_MODEL,
    SEED_NOTE,
    OpenAIImagesModel,
    price_for,
)
from pytest_imagetime.sheet.geometry import scaffold
from tests.builders import case_dict, write_case_file
from tests.fake_openai import (
    EDIT_INPUT_IMAGE_TOKENS,
    OUTPUT_IMAGE_TOKENS,
    REFUSAL_MESSAGE,
    ChatServer,
    ServerState,
    chat_server,
    drawn_png,
)

KEY = "sk-images-0123456789abcdef-SECRET"
SIZE = 128
GPT_IMAGE_1 = {"text_input": 5.0, "image_input": 10.0, "image_output": 40.0}


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server() as running:
        yield running


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    return KEY


def _model(server: ChatServer, argument: str | None = "gpt-image-1",
           **options: Any) -> OpenAIImagesModel:
    values: dict[str, Any] = {"base_url": server.base_url, "retries": 1, "timeout_s": 5.0}
    values.update(options)
    return OpenAIImagesModel(argument, name="openai-images", options=ModelOptions(**values))


def _request(case: Case, **fields: Any) -> GenerationRequest:
    return GenerationRequest(case=case, setting=fields.pop("setting", "prompt-only"),
                             size=SIZE, seed=1234, **fields)


def _scaffold_request(case: Case) -> GenerationRequest:
    reference = Image.new("RGB", (64, 64), (200, 30, 30))
    return _request(case, setting="scaffold", reference=reference,
                    scaffold=scaffold(reference, SIZE))


def _expected_cost(text: int, image_in: int, image_out: int) -> float:
    return (text * 5.0 + image_in * 10.0 + image_out * 40.0) / 1e6


# ------------------------------------------------------------ requests and records


def test_a_generation_round_trip(server: ChatServer, key: str, case: Case) -> None:
    generated = _model(server).generate(request=_request(case))
    (sent,) = server.state.requests
    assert server.state.paths == ["/v1/images/generations"]
    assert sent == {"model": "gpt-image-1", "prompt": case.prompt, "n": 1,
                    "size": f"{SIZE}x{SIZE}"}
    assert server.state.headers[0]["authorization"] == f"Bearer {KEY}"
    drawn = Image.open(io.BytesIO(drawn_png(case.prompt, (SIZE, SIZE)))).convert("RGB")
    assert generated.image.mode == "RGB" and generated.image.tobytes() == drawn.tobytes()
    details = generated.details
    text_tokens = len(case.prompt) // 4
    assert details["model"] == "gpt-image-1" and details["endpoint"] == "generations"
    assert details["api_size"] == f"{SIZE}x{SIZE}" and details["returned_size"] == [SIZE, SIZE]
    assert details["seed"] == 1234 and details["seed_note"] == SEED_NOTE
    assert not details["seed_sent"] and details["created"] > 0
    assert details["usage"]["output_tokens"] == OUTPUT_IMAGE_TOKENS
    assert details["cost_usd"] == pytest.approx(
        _expected_cost(text_tokens, 0, OUTPUT_IMAGE_TOKENS))
    assert details["delivery"] == "b64_json" and details["images_returned"] == 1
    assert details["seconds"] >= 0 and details["revised_prompt"] is None
    json.dumps(details)  # records are JSON


def test_the_key_comes_from_the_configured_variable(server: ChatServer, case: Case,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("IMAGES_KEY", KEY)
    _model(server, key_env="IMAGES_KEY").generate(request=_request(case))
    assert server.state.headers[0]["authorization"] == f"Bearer {KEY}"


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IMAGES_KEY", raising=False)
    with pytest.raises(ValueError, match=r"environment variable IMAGES_KEY.*"
                                         r"--imagetime-model-key-env"):
        OpenAIImagesModel(None, options=ModelOptions(key_env="IMAGES_KEY"))


def test_a_server_without_keys_gets_none(server: ChatServer, case: Case,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _model(server, key_env=None).generate(request=_request(case))
    # The client insists on some credential: a placeholder, never a key from the environment.
    assert server.state.headers[0].get("authorization", "Bearer unused") == "Bearer unused"


def test_the_base_url_can_come_from_the_environment(server: ChatServer, key: str, case: Case,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    model = OpenAIImagesModel(None, options=ModelOptions(retries=0))
    assert model.base_url == server.base_url
    model.generate(request=_request(case))
    assert len(server.state.requests) == 1


@pytest.mark.parametrize(
    ("argument", "model", "overrides", "name"),
    [
        (None, DEFAULT_MODEL, {}, "openai-images"),
        ("gpt-image-1.5", "gpt-image-1.5", {}, "openai-images:gpt-image-1.5"),
        ("quality=low", DEFAULT_MODEL, {"quality": "low"}, "openai-images:quality=low"),
        ("gpt-image-1:quality=high,api_size=1024x1024,background=opaque,moderation=low,"
         "output_format=png", "gpt-image-1",
         {"quality": "high", "api_size": "1024x1024", "background": "opaque",
          "moderation": "low", "output_format": "png"}, None),
    ],
)
def test_specs(key: str, argument: str | None, model: str, overrides: dict[str, Any],
               name: str | None) -> None:
    built = MODELS.create(f"openai-images:{argument}" if argument else "openai-images")
    assert isinstance(built, OpenAIImagesModel)
    assert built.model == model and built.overrides == overrides
    assert built.name == (name or f"openai-images:{argument}")


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("gpt-image-1:steps=4", r"unknown override 'steps'; accepted: api_size, background.*"
                                r"quality"),
        ("quality=ultra", r"quality='ultra': use one of low, medium, high"),
        ("api_size=big", r"api_size='big': give WIDTHxHEIGHT"),
        ("output_compression=101", r"give an integer from 0 to 100"),
        ("output_compression=high", r"output_compression='high': give an integer from 0 to 100"),
    ],
)
def test_bad_overrides_are_errors_that_say_why(key: str, argument: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OpenAIImagesModel(argument)


def test_overrides_reach_the_request_and_the_image_is_kept_as_given(
        server: ChatServer, key: str, case: Case) -> None:
    model = _model(server, "gpt-image-1:quality=high,api_size=256x256,background=opaque,"
                           "moderation=low,output_format=png")
    generated = model.generate(request=_request(case))
    (sent,) = server.state.requests
    assert sent["quality"] == "high" and sent["size"] == "256x256"
    assert (sent["background"], sent["moderation"], sent["output_format"]) == (
        "opaque", "low", "png")
    assert generated.image.size == (256, 256)  # not resized: both sizes are recorded
    details = generated.details
    assert details["requested_size"] == SIZE and details["returned_size"] == [256, 256]
    assert details["quality"] == "high" and details["reported"]["quality"] == "high"


def test_the_seed_is_sent_only_when_asked(server: ChatServer, key: str, case: Case) -> None:
    generated = _model(server, "send_seed=true").generate(request=_request(case))
    assert server.state.requests[0]["seed"] == 1234
    assert generated.details["seed_sent"] and "seed_note" not in generated.details


def test_an_image_left_at_a_url_is_fetched(server: ChatServer, key: str, case: Case) -> None:
    generated = _model(server, "response_format=url").generate(request=_request(case))
    assert server.state.requests[0]["response_format"] == "url"
    assert generated.details["delivery"] == "url" and generated.image.size == (SIZE, SIZE)


def test_a_revised_prompt_is_recorded(server: ChatServer, key: str, case: Case) -> None:
    server.state.revised_prompt = "A tidier prompt."
    generated = _model(server).generate(request=_request(case))
    assert generated.details["revised_prompt"] == "A tidier prompt."


# ------------------------------------------------------------ scaffold edits


def test_the_scaffold_goes_to_the_edits_endpoint(server: ChatServer, key: str,
                                                 case: Case) -> None:
    request = _scaffold_request(case)
    model = _model(server, "gpt-image-1:quality=low,input_fidelity=high,moderation=low")
    assert model.accepts_reference
    generated = model.generate(request=request)
    assert server.state.paths == ["/v1/images/edits"]
    (sent,) = server.state.requests
    assert (sent["model"], sent["prompt"], sent["size"], sent["n"]) == (
        "gpt-image-1", case.prompt, f"{SIZE}x{SIZE}", "1")
    assert sent["quality"] == "low" and sent["input_fidelity"] == "high"
    assert "moderation" not in sent  # the edits endpoint takes none
    part = sent["image"]
    assert (part["filename"], part["content_type"]) == ("scaffold.png", "image/png")
    assert part["data"].startswith(b"\x89PNG")
    sent_image = Image.open(io.BytesIO(part["data"]))
    assert sent_image.size == (SIZE, SIZE)
    assert request.scaffold is not None
    assert sent_image.convert("RGB").tobytes() == request.scaffold.convert("RGB").tobytes()
    details = generated.details
    assert details["endpoint"] == "edits"
    assert details["cost_usd"] == pytest.approx(_expected_cost(
        len(case.prompt) // 4, EDIT_INPUT_IMAGE_TOKENS, OUTPUT_IMAGE_TOKENS))


def test_a_reference_image_is_a_plain_generation(server: ChatServer, key: str,
                                                 case: Case) -> None:
    canvas = _scaffold_request(case).scaffold
    _model(server).generate(request=_request(case, kind="reference", prompt="Only t1.",
                                             scaffold=canvas))
    assert server.state.paths == ["/v1/images/generations"]
    assert server.state.requests[0]["prompt"] == "Only t1."


# ------------------------------------------------------------ faults


def test_transport_faults_are_retried_and_one_image_kept(server: ChatServer, key: str,
                                                         case: Case) -> None:
    server.state.fault_queue = ["429", "500"]
    generated = _model(server, retries=2).generate(request=_request(case))
    assert server.state.faults_served == {"429": 1, "500": 1}
    assert len(server.state.requests) == 3
    assert generated.details["images_returned"] == 1


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("429", "HTTP 429 from the images endpoint: rate limited"),
        ("500", "HTTP 500 from the images endpoint: server error 500"),
        ("503", "HTTP 503"),
        ("timeout", "the images endpoint timed out (0.3 s a request)"),
        ("reset", "cannot reach the images endpoint http://127.0.0.1:"),
        ("malformed", "the images endpoint's response is not valid JSON"),
        ("content_policy", f"the endpoint refused the prompt (content policy): "
                           f"{REFUSAL_MESSAGE}"),
        ("no_data", "the images endpoint answered without image data"),
        ("bad_b64", "the endpoint returned invalid base64 image data"),
        ("not_image", "the endpoint returned an image that cannot be decoded"),
    ],
)
def test_each_failure_is_a_model_error_with_its_reason(
        server: ChatServer, key: str, case: Case, fault: str, reason: str) -> None:
    server.state.fault_queue = [fault]
    server.state.timeout_sleep_s = 1.0
    with pytest.raises(ModelError) as info:
        _model(server, retries=0, timeout_s=0.3).generate(request=_request(case))
    assert reason in str(info.value)
    assert KEY not in str(info.value)


def test_a_refusal_is_never_asked_again(server: ChatServer, key: str, case: Case) -> None:
    server.state.fault_queue = ["content_policy"]
    with pytest.raises(ModelError, match=r"refused the prompt \(content policy\)"):
        _model(server, retries=3).generate(request=_request(case))
    assert len(server.state.requests) == 1


def test_the_key_never_appears_in_an_error(key: str, case: Case) -> None:
    # An endpoint address that holds the key (a proxy's path, say) and cannot be reached.
    model = OpenAIImagesModel(None, options=ModelOptions(
        base_url=f"http://127.0.0.1:1/{KEY}/v1", retries=0, timeout_s=2.0))
    with pytest.raises(ModelError, match="cannot reach the images endpoint") as info:
        model.generate(request=_request(case))
    assert KEY not in str(info.value) and "***" in str(info.value)


# ------------------------------------------------------------ threads, config, prices


def test_concurrent_requests_share_one_client(server: ChatServer, key: str,
                                              case: Case) -> None:
    server.state.latency_s = 0.3
    model = _model(server, concurrency=4)
    assert model.concurrency == 4
    with ThreadPoolExecutor(max_workers=model.concurrency) as pool:
        results = list(pool.map(lambda seed: model.generate(request=_request(case)), range(4)))
    assert len(results) == 4 and all(r.image.size == (SIZE, SIZE) for r in results)
    assert server.state.max_in_flight > 1
    assert len(server.state.requests) == 4


def test_config_names_what_changes_the_image_and_never_the_key(server: ChatServer,
                                                               key: str) -> None:
    config = dict(_model(server, "gpt-image-1:quality=high").config())
    assert config == {"backend": "openai-images", "model": "gpt-image-1",
                      "base_url": server.base_url, "overrides": {"quality": "high"}}
    assert KEY not in json.dumps(config)
    assert _model(server, "gpt-image-1:quality=low").config() != config


def test_prices_by_model_family() -> None:
    assert price_for("gpt-image-1") == GPT_IMAGE_1
    assert price_for("gpt-image-1-2025-04-23") == GPT_IMAGE_1
    assert price_for("gpt-image-1-mini") == {"text_input": 2.0, "image_input": 2.5,
                                             "image_output": 8.0}
    assert price_for("gpt-image-1.5") is not None
    # The paper's GPT Image 2 and its dated snapshot: its cost is on the cost figure.
    assert price_for("gpt-image-2") == {"text_input": 5.0, "image_input": 8.0,
                                        "image_output": 30.0}
    assert price_for("gpt-image-2-2026-04-21") == price_for("gpt-image-2")
    assert price_for("someone-elses-image-model") is None


def test_an_unknown_price_is_no_cost_and_says_so(server: ChatServer, key: str,
                                                 case: Case) -> None:
    generated = _model(server, "local-image-model").generate(request=_request(case))
    assert generated.details["cost_usd"] is None
    assert "no price for 'local-image-model'" in generated.details["cost_note"]
    assert generated.details["usage"]["output_tokens"] == OUTPUT_IMAGE_TOKENS


# ------------------------------------------------------------ a whole run


def test_a_run_generates_through_the_plugin(pytester: pytest.Pytester,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    with chat_server(ServerState()) as running:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", running.base_url)
        write_case_file(pytester.path / "k.yaml", [case_dict()])
        result = pytester.runpytest("k.yaml", "--imagetime-model=openai-images:gpt-image-1",
                                    "--imagetime-judge=pixel", f"--imagetime-size={SIZE}")
        requests = list(running.state.requests)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1, result.stdout.str()
    assert "errors" not in outcomes and "error" not in outcomes
    assert len(requests) == 1 and requests[0]["model"] == "gpt-image-1"
    images = pytester.path / "reports" / "openai-images-gpt-image-1" / "images"
    record = json.loads((images / "kitchen-pour-water-1.json").read_text())
    assert Path(images / "kitchen-pour-water-1.png").is_file()
    assert record["model"] == "openai-images:gpt-image-1"
    assert record["model_config"]["model"] == "gpt-image-1"
    assert record["details"]["endpoint"] == "generations"
    assert KEY not in json.dumps(record)
