"""The model base class: each optional feature's default, and how the registry adapts a
third-party backend that does not inherit from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.backends.registry import IncompleteBackend, Registry
from pytest_imagetime.models.base import (
    Generated,
    GenerationRequest,
    ImageModel,
    PluginModel,
    adapt_model,
)
from pytest_imagetime.models.procedural import ProceduralModel
from tests.builders import make_case


def _request(seed: int = 0) -> GenerationRequest:
    return GenerationRequest(case=make_case(), setting="prompt-only", size=64, seed=seed)


def _drawn(request: GenerationRequest) -> Generated:
    return Generated(Image.new("RGB", (request.size, request.size)), {"seed": request.seed})


class Minimal(ImageModel):
    """Only what every backend must have."""

    @property
    def name(self) -> str:
        return "minimal"

    def config(self) -> Mapping[str, Any]:
        return {}

    def generate(self, *, request: GenerationRequest) -> Generated:
        return _drawn(request)


class Plain:
    """A third-party backend that does not inherit, with no optional feature."""

    def __init__(self, argument: str | None = None) -> None:
        self.argument = argument

    @property
    def name(self) -> str:
        return "plain"

    def config(self) -> Mapping[str, Any]:
        return {"argument": self.argument}

    def generate(self, *, request: GenerationRequest) -> Generated:
        return _drawn(request)


class Featured(Plain):
    """A third-party backend with every optional feature, none of them inherited."""

    concurrency = 3
    cpu_bound = True
    accepts_reference = True

    def __init__(self, argument: str | None = None) -> None:
        super().__init__(argument)
        self.closed = False
        self.batches: list[int] = []

    @property
    def draws_on_gpu(self) -> bool:
        return False  # declared: asked at the first drawing, whatever it answers

    def generate_batch(self, *, requests: Sequence[GenerationRequest]) -> list[Generated]:
        self.batches.append(len(requests))
        return [_drawn(r) for r in requests]

    def input_token(self, request: GenerationRequest) -> str:
        return f"token-{request.seed}"

    def check_selection(self, case_ids: Sequence[str]) -> None:
        raise ValueError(f"nothing for {', '.join(case_ids)}")

    def close(self) -> None:
        self.closed = True


class NoGenerate:
    name = "no-generate"

    def config(self) -> Mapping[str, Any]:
        return {}


def test_every_optional_feature_has_its_default() -> None:
    model = Minimal()
    assert model.concurrency == 1
    assert not model.cpu_bound
    assert not model.accepts_reference
    assert not model.supports_batch
    assert not model.may_draw_on_gpu
    assert not model.draws_on_gpu
    assert not model.in_own_process
    assert model.draw_ahead(calls=[("generate", {"request": _request()})]) is False
    assert model.input_token(request=_request()) is None
    model.check_selection(case_ids=["a"])  # refuses nothing
    model.close()


def test_the_default_batch_draws_each_request_in_order() -> None:
    drawn = Minimal().generate_batch(requests=[_request(1), _request(2)])
    assert [g.details["seed"] for g in drawn] == [1, 2]


def test_a_backend_must_implement_name_config_and_generate() -> None:
    class Incomplete(ImageModel):
        def config(self) -> Mapping[str, Any]:
            return {}

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()  # type: ignore[abstract]


def test_a_built_in_backend_declares_what_it_overrides() -> None:
    model = ProceduralModel()
    assert isinstance(model, ImageModel)
    assert adapt_model(model, "procedural") is model
    assert model.cpu_bound and model.accepts_reference
    assert model.concurrency == 1 and not model.supports_batch


def test_a_plain_backend_gets_every_default() -> None:
    model = adapt_model(Plain("x"), "plain")
    assert isinstance(model, PluginModel)
    assert (model.name, dict(model.config())) == ("plain", {"argument": "x"})
    assert model.generate(request=_request(4)).details == {"seed": 4}
    assert model.concurrency == 1
    assert not (model.cpu_bound or model.accepts_reference or model.supports_batch)
    assert not (model.may_draw_on_gpu or model.draws_on_gpu or model.in_own_process)
    assert model.input_token(request=_request()) is None
    model.check_selection(case_ids=["a"])
    model.close()
    assert [g.details["seed"] for g in model.generate_batch(requests=[_request(1)])] == [1]
    assert model.argument == "x"  # its own attributes stay reachable


def test_a_plain_backend_s_features_are_read_through_the_adapter() -> None:
    backend = Featured()
    model = adapt_model(backend, "featured")
    assert model.concurrency == 3 and model.cpu_bound and model.accepts_reference
    assert model.supports_batch
    assert len(model.generate_batch(requests=[_request(1), _request(2)])) == 2
    assert backend.batches == [2]  # one call of its own batch, not two of generate
    assert model.may_draw_on_gpu and not model.draws_on_gpu
    assert model.input_token(request=_request(7)) == "token-7"
    with pytest.raises(ValueError, match="nothing for a, b"):
        model.check_selection(case_ids=["a", "b"])
    model.close()
    assert backend.closed


def test_a_backend_without_generate_is_refused_by_name() -> None:
    with pytest.raises(IncompleteBackend,
                       match=r"the model 'broken' \(tests\.models\.test_base\.NoGenerate\) has "
                             r"no generate; a model needs name, config, generate"):
        adapt_model(NoGenerate(), "broken")


REGISTRY = Registry("model", "imagetime.test-models-none", {
    "plain": "tests.models.test_base:Plain",
    "broken": "tests.models.test_base:NoGenerate",
    "minimal": "tests.models.test_base:Minimal",
}, "pytest_imagetime.models.base:adapt_model")


def test_the_registry_adapts_what_it_creates() -> None:
    plain = REGISTRY.create("plain:arg")
    assert isinstance(plain, PluginModel) and plain.config() == {"argument": "arg"}
    assert isinstance(REGISTRY.create("minimal"), Minimal)
    with pytest.raises(IncompleteBackend, match=r"'broken'.*has no generate"):
        REGISTRY.create("broken")
