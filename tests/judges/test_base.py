"""The judge base class: each optional feature's default, what the built-in judges declare,
and how the registry adapts a third-party judge that does not inherit from it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.backends.prices import Price
from pytest_imagetime.backends.registry import IncompleteBackend, Registry
from pytest_imagetime.judges.base import (
    Judge,
    JudgeOptions,
    PluginJudge,
    SheetToJudge,
    adapt_judge,
)
from pytest_imagetime.judges.batch import BatchJudge
from pytest_imagetime.judges.pixel import PixelJudge
from pytest_imagetime.judges.vlm import VlmJudge
from pytest_imagetime.rubric.judgment import JudgeError, Judgment

NO_CALLS = JudgeOptions(calls=False, price_per_mtok=(1.0, 2.0))


class Minimal(Judge):
    """Only what every judge must have."""

    @property
    def name(self) -> str:
        return "minimal"

    @property
    def scored_dims(self) -> frozenset[str]:
        return frozenset({"C0"})

    def config(self) -> Mapping[str, Any]:
        return {}

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        raise JudgeError("never asked here")


class Plain:
    """A third-party judge that does not inherit, with no optional feature."""

    name = "plain"
    scored_dims = frozenset({"C0"})

    def config(self) -> Mapping[str, Any]:
        return {"judge": "plain"}

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        raise JudgeError("plain judges nothing")


class _Options:
    response_format = "json_object"


class Featured(Plain):
    """A third-party judge with every optional feature, none of them inherited."""

    cpu_bound = True
    price = None  # calls a model whose price is unknown
    options = _Options()

    def prompt_template(self) -> str:
        return "the prompt"


class NoJudge:
    name = "no-judge"

    def config(self) -> Mapping[str, Any]:
        return {}


def test_every_optional_feature_has_its_default() -> None:
    judge = Minimal()
    assert not judge.cpu_bound
    assert not judge.calls_a_model
    assert judge.price is None
    assert judge.response_format == "json_schema"
    assert judge.answering is judge
    assert judge.prompt_template() is None


def test_a_judge_must_implement_name_dims_config_and_judge() -> None:
    class Incomplete(Judge):
        def config(self) -> Mapping[str, Any]:
            return {}

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()  # type: ignore[abstract]


def test_built_in_judges_declare_what_they_override(tmp_path: Path) -> None:
    pixel = PixelJudge()
    assert adapt_judge(pixel, "pixel") is pixel
    assert pixel.cpu_bound and not pixel.calls_a_model and pixel.price is None
    vlm = VlmJudge(options=NO_CALLS)
    assert not vlm.cpu_bound and vlm.calls_a_model
    assert vlm.price == Price.of(1.0, 2.0)
    assert vlm.response_format == "json_schema"
    assert "JSON" in (vlm.prompt_template() or "")
    batch = BatchJudge(vlm, tmp_path)
    assert batch.answering is vlm and batch.calls_a_model and batch.price == vlm.price
    assert not batch.cpu_bound
    assert batch.prompt_template() is None  # its run keeps no prompt, as before
    objects = VlmJudge(options=JudgeOptions(calls=False, response_format="json_object"))
    assert objects.response_format == "json_object"


def test_a_plain_judge_gets_every_default() -> None:
    judge = adapt_judge(Plain(), "plain")
    assert isinstance(judge, PluginJudge)
    assert (judge.name, judge.scored_dims, dict(judge.config())) == \
        ("plain", frozenset({"C0"}), {"judge": "plain"})
    assert not judge.cpu_bound and not judge.calls_a_model and judge.price is None
    assert judge.response_format == "json_schema" and judge.prompt_template() is None
    assert judge.answering is judge


def test_a_plain_judge_s_features_are_read_through_the_adapter() -> None:
    judge = adapt_judge(Featured(), "featured")
    assert judge.cpu_bound
    assert judge.calls_a_model and judge.price is None  # its cost is unknown, not 0
    assert judge.response_format == "json_object"
    assert judge.prompt_template() == "the prompt"
    assert isinstance(judge, PluginJudge)
    assert judge.options.response_format == "json_object"  # its own attributes stay reachable


def test_a_judge_without_judge_is_refused_by_name() -> None:
    with pytest.raises(IncompleteBackend,
                       match=r"the judge 'broken' \(tests\.judges\.test_base\.NoJudge\) has no "
                             r"scored_dims, judge; a judge needs name, scored_dims, config, "
                             r"judge"):
        adapt_judge(NoJudge(), "broken")


REGISTRY = Registry("judge", "imagetime.test-judges-none", {
    "plain": "tests.judges.test_base:Plain",
    "broken": "tests.judges.test_base:NoJudge",
}, "pytest_imagetime.judges.base:adapt_judge")


def test_the_registry_adapts_what_it_creates() -> None:
    assert isinstance(REGISTRY.create("plain"), PluginJudge)
    with pytest.raises(IncompleteBackend, match=r"'broken'.*has no scored_dims, judge"):
        REGISTRY.create("broken")
