"""The diffusers knobs' own functions on values and stand-in pipelines: parsing, the config
they add, load options and what each knob does to a pipeline (models/diffusers_knobs.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.models.base import ModelError
from pytest_imagetime.models.diffusers_knobs import (
    OVERRIDES,
    Knobs,
    Lora,
    apply_compile,
    apply_loras,
    apply_vae,
    check_installed,
    compile_choice,
    components,
    denoisers,
    knobs_from,
    load_options,
    loras,
)
from pytest_imagetime.models.overrides import OverrideError


def test_loras_parse_sources_and_scales(tmp_path: Path) -> None:
    weights = tmp_path / "b.safetensors"
    weights.write_bytes(b"")
    parsed = loras(f"org/lora@0.8 + {weights}")
    assert parsed == (Lora("org/lora", 0.8), Lora(str(weights), 1.0))
    assert loras("org/repo/file.safetensors") == (Lora("org/repo/file.safetensors"),)


@pytest.mark.parametrize(("raw", "message"), [
    ("", "give SOURCE[@SCALE] joined by '+'"),
    ("org/a+@0.5", "give SOURCE[@SCALE] joined by '+'"),
    ("org/a@big", "scale 'big' of org/a is not a number"),
    ("/no/such/lora.safetensors", "no file or folder /no/such/lora.safetensors"),
    ("./missing", "no file or folder ./missing"),
])
def test_bad_loras_are_refused_with_their_reason(raw: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("+", r"\+")):
        loras(raw)


def test_a_lora_knows_its_hub_parts_and_local_path(tmp_path: Path) -> None:
    assert Lora("org/name").hub_parts() == ("org/name", None)
    assert Lora("org/name/sub/w.safetensors").hub_parts() == ("org/name", "sub/w.safetensors")
    assert Lora("org/name").local_path() is None
    assert Lora(str(tmp_path)).local_path() == tmp_path
    assert Lora("org/x", 0.5).as_config("c" * 40) == {"source": "org/x", "scale": 0.5,
                                                      "revision": "c" * 40}


def test_components_split_on_plus_and_refuse_none() -> None:
    assert components("transformer + text_encoder_2+") == ("transformer", "text_encoder_2")
    with pytest.raises(ValueError, match="give component names joined by"):
        components(" + ")


@pytest.mark.parametrize(("raw", "expected"), [
    ("full", "full"), ("FULL", "full"), ("regional", "regional"), ("true", "auto"),
    ("yes", "auto"), ("1", "auto"), ("false", "none"), ("off", "none"),
])
def test_compile_choice(raw: str, expected: str) -> None:
    assert compile_choice(raw) == expected


def test_compile_choice_refuses_other_words() -> None:
    with pytest.raises(ValueError, match="give true, false, full or regional"):
        compile_choice("sometimes")


def test_the_override_table_converts_each_knob() -> None:
    assert OVERRIDES["quantization"]("bnb-4bit") == "bnb-4bit"
    with pytest.raises(ValueError, match="use one of bnb-4bit"):
        OVERRIDES["quantization"]("int3")
    with pytest.raises(ValueError, match="use one of balanced"):
        OVERRIDES["device_map"]("auto")
    assert OVERRIDES["vae_tiling"]("on") is True


def test_default_knobs_add_nothing() -> None:
    knobs = Knobs()
    assert knobs.pixel_config([]) == {} and knobs.details() == {}
    assert load_options(knobs, None, {}) == {}


def test_pixel_config_keeps_what_changes_pixels_and_details_keep_every_set_knob() -> None:
    knobs = Knobs(lora=(Lora("org/a", 0.5),), quantization="bnb-8bit", attention="flash",
                  compile="auto", device_map="balanced", vae_tiling=True, vae_slicing=True)
    assert knobs.pixel_config(["r" * 40]) == {
        "lora": [{"source": "org/a", "scale": 0.5, "revision": "r" * 40}],
        "quantization": "bnb-8bit", "quantize": ["denoiser"], "attention": "flash",
        "vae_tiling": True}
    assert knobs.details() == {
        "lora": [{"source": "org/a", "scale": 0.5}], "quantization": "bnb-8bit",
        "attention": "flash", "device_map": "balanced", "vae_tiling": True,
        "vae_slicing": True}
    named = Knobs(quantization="bnb-4bit", quantize=("text_encoder",))
    assert named.pixel_config([])["quantize"] == ["text_encoder"]


def test_pixel_config_needs_a_revision_per_lora() -> None:
    with pytest.raises(ValueError, match="shorter than argument 1"):
        Knobs(lora=(Lora("org/a"), Lora("org/b"))).pixel_config(["r" * 40])


def test_knobs_from_fills_defaults_and_refuses_bad_combinations() -> None:
    assert knobs_from({}, "flux") == Knobs()
    assert knobs_from({"compile": "full", "vae_slicing": True}, "flux") == Knobs(
        compile="full", vae_slicing=True)
    with pytest.raises(OverrideError, match="flux: quantize= names what quantization="):
        knobs_from({"quantize": ("unet",)}, "flux")
    with pytest.raises(OverrideError, match=r"sd: device_map=balanced .* drop cpu_offload="):
        knobs_from({"device_map": "balanced", "cpu_offload": "model"}, "sd")
    assert knobs_from({"device_map": "balanced", "cpu_offload": "none"}, "sd").device_map


def test_an_attention_backend_diffusers_lacks_names_the_accepted_ones() -> None:
    diffusers = pytest.importorskip("diffusers")
    if not hasattr(diffusers.ModelMixin, "set_attention_backend"):
        pytest.skip("this diffusers has no attention backends")
    check_installed(Knobs(), "sd")  # nothing asked, nothing needed
    with pytest.raises(OverrideError, match=r"sd: attention='nope' .* accepted: .*native"):
        check_installed(Knobs(attention="nope"), "sd")


def test_quantizing_a_component_the_pipeline_lacks_names_its_components() -> None:
    knobs = Knobs(quantization="bnb-4bit", quantize=("transformer",))
    with pytest.raises(ModelError, match="quantize= names transformer; the pipeline's "
                                         "components: text_encoder, unet"):
        load_options(knobs, None, {"unet": "diffusers", "text_encoder": "transformers"})


def test_quantizing_a_component_of_another_library_is_refused() -> None:
    knobs = Knobs(quantization="torchao-int8", quantize=("scheduler",))
    with pytest.raises(ModelError, match="scheduler, a schedulers component; only diffusers"):
        load_options(knobs, None, {"scheduler": "schedulers"})


def test_a_device_map_is_a_load_option() -> None:
    assert load_options(Knobs(device_map="balanced"), None, {}) == {"device_map": "balanced"}


class Module:
    def __init__(self, repeated: bool = False) -> None:
        self.compiled: list[str] = []
        if repeated:
            self._repeated_blocks = ["Block"]

    def compile(self) -> None:
        self.compiled.append("full")

    def compile_repeated_blocks(self) -> None:
        self.compiled.append("regional")


class Vae:
    def __init__(self) -> None:
        self.enabled: list[str] = []

    def enable_tiling(self) -> None:
        self.enabled.append("tiling")

    def enable_slicing(self) -> None:
        self.enabled.append("slicing")


class Pipe:
    def __init__(self, **parts: Any) -> None:
        self.__dict__.update(parts)
        self.loaded: list[tuple[Any, ...]] = []
        self.adapters: tuple[Any, ...] = ()

    def load_lora_weights(self, source: str, **kwargs: Any) -> None:
        if source == "org/broken":
            raise OSError("404")
        self.loaded.append((source, kwargs))

    def set_adapters(self, names: list[str], adapter_weights: list[float]) -> None:
        self.adapters = (names, adapter_weights)


def test_denoisers_lists_the_present_ones_in_order() -> None:
    unet, prior = Module(), Module()
    assert denoisers(Pipe(prior=prior, unet=unet, transformer=None)) == [("unet", unet),
                                                                         ("prior", prior)]


def test_compile_is_regional_where_blocks_repeat_unless_full_is_asked() -> None:
    transformer, unet = Module(repeated=True), Module()
    pipe = Pipe(transformer=transformer, unet=unet)
    assert apply_compile(pipe, Knobs()) is None
    assert apply_compile(pipe, Knobs(compile="auto")) == "transformer:regional+unet:full"
    assert apply_compile(pipe, Knobs(compile="full")) == "transformer:full+unet:full"
    assert transformer.compiled == ["regional", "full"] and unet.compiled == ["full", "full"]


def test_regional_compile_without_repeated_blocks_is_refused() -> None:
    with pytest.raises(ModelError, match="Module declares no repeated blocks"):
        apply_compile(Pipe(unet=Module()), Knobs(compile="regional"))


def test_compile_without_a_denoiser_is_refused() -> None:
    with pytest.raises(ModelError, match="Pipe has no transformer or unet to compile"):
        apply_compile(Pipe(), Knobs(compile="auto"))


def test_vae_knobs_call_the_vae_and_refuse_a_missing_one() -> None:
    vae = Vae()
    apply_vae(Pipe(vae=vae), Knobs(vae_tiling=True, vae_slicing=True))
    assert vae.enabled == ["tiling", "slicing"]
    apply_vae(Pipe(), Knobs())  # nothing asked of a pipeline without a VAE
    with pytest.raises(ModelError, match="Pipe's VAE has no enable_slicing; drop vae_slicing="):
        apply_vae(Pipe(), Knobs(vae_slicing=True))


def test_loras_load_as_named_adapters_with_their_scales(tmp_path: Path) -> None:
    file = tmp_path / "one.safetensors"
    file.write_bytes(b"")
    folder = tmp_path / "folder"
    folder.mkdir()
    pipe = Pipe()
    knobs = Knobs(lora=(Lora(str(file), 0.5), Lora(str(folder)), Lora("org/r/w.safetensors"),
                        Lora("org/plain", 2.0)))
    apply_loras(pipe, knobs)
    assert pipe.loaded == [
        (str(tmp_path), {"weight_name": "one.safetensors", "adapter_name": "lora0"}),
        (str(folder), {"adapter_name": "lora1"}),
        ("org/r", {"adapter_name": "lora2", "weight_name": "w.safetensors"}),
        ("org/plain", {"adapter_name": "lora3"})]
    assert pipe.adapters == (["lora0", "lora1", "lora2", "lora3"], [0.5, 1.0, 1.0, 2.0])


def test_a_lora_that_fails_to_load_names_itself_and_the_pipeline() -> None:
    with pytest.raises(ModelError, match="lora=org/broken: cannot load it into Pipe: OSError"):
        apply_loras(Pipe(), Knobs(lora=(Lora("org/broken"),)))


def test_a_pipeline_without_lora_support_is_refused() -> None:
    apply_loras(object(), Knobs())  # nothing asked
    with pytest.raises(ModelError, match="object takes no LoRA weights"):
        apply_loras(object(), Knobs(lora=(Lora("org/a"),)))


@given(st.lists(st.tuples(st.from_regex(r"[a-z]{1,8}/[a-z]{1,8}", fullmatch=True),
                          st.floats(-10, 10, allow_nan=False)), min_size=1, max_size=4))
def test_loras_round_trip_through_their_spelling(pairs: list[tuple[str, float]]) -> None:
    raw = "+".join(f"{source}@{scale!r}" for source, scale in pairs)
    assert loras(raw) == tuple(Lora(source, scale) for source, scale in pairs)
