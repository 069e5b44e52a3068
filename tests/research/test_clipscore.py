"""CLIPScore's own rules on a tiny random CLIP: the weight, the clamp, empty and unequal
inputs, and a text shared by many images encoded once."""

from __future__ import annotations

from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.research.baselines.clipscore import CLIPSCORE_WEIGHT, ClipScorer
from tests.tiny_text_models import save_clip

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def clip_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(save_clip(tmp_path_factory.mktemp("clip") / "clip"))


def _images(count: int) -> list[Image.Image]:
    return [Image.new("RGB", (40 + 4 * n, 40), (60 * n % 256, 90, 200 - 30 * n))
            for n in range(count)]


def test_the_score_is_the_weighted_positive_cosine(clip_dir: str) -> None:
    plain = ClipScorer(clip_dir, device="cpu").score(_images(3), ["a", "b c", "a dog"])
    weighted = ClipScorer(clip_dir, device="cpu", weight=1.0).score(_images(3),
                                                                     ["a", "b c", "a dog"])
    for default, one in zip(plain, weighted, strict=True):
        assert default.cosine == pytest.approx(one.cosine, abs=1e-6)
        assert default.score == pytest.approx(CLIPSCORE_WEIGHT * max(default.cosine, 0.0))
        assert one.score == pytest.approx(max(one.cosine, 0.0))
        assert -1.0 <= one.cosine <= 1.0


def test_empty_and_unequal_inputs(clip_dir: str) -> None:
    scorer = ClipScorer(clip_dir, device="cpu")
    assert scorer.score([], []) == []
    with pytest.raises(ValueError, match=r"^1 images but 2 texts$"):
        scorer.score(_images(1), ["a", "b"])


def test_a_shared_text_is_encoded_once(clip_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    scorer = ClipScorer(clip_dir, device="cpu", batch_size=8)
    encoded: list[int] = []
    real = scorer.model.get_text_features

    def counting(**kwargs: Any) -> Any:
        encoded.append(int(kwargs["input_ids"].shape[0]))
        return real(**kwargs)

    monkeypatch.setattr(scorer.model, "get_text_features", counting)
    first = scorer.score(_images(4), ["same prompt"] * 3 + ["other"])
    assert encoded == [2]
    again = scorer.score_one(_images(1)[0], "same prompt")
    assert encoded == [2]  # kept by text
    assert again.cosine == pytest.approx(first[0].cosine, abs=1e-6)  # one image vs a batch


def test_embeddings_are_unit_length_rows(clip_dir: str) -> None:
    scorer = ClipScorer(clip_dir, device="cpu", batch_size=2)
    images = scorer.image_embeddings(_images(3))
    texts = scorer.text_embeddings(["x", "y", "x"])
    assert images.shape[0] == 3 and texts.shape[0] == 3
    assert images.norm(dim=-1).tolist() == pytest.approx([1.0] * 3, abs=1e-5)
    assert texts[0].tolist() == texts[2].tolist()
