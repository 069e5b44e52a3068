"""Caption similarity's parts on tiny random models: the clamped cosine, the embedder's token
limit and cache, the captioner's batches, empty and unequal inputs."""

from __future__ import annotations

from typing import Any

import pytest
from PIL import Image

from pytest_imagetime.research.baselines.caption_similarity import (
    EMBED_TOKENS,
    Captioner,
    CaptionSimilarityScorer,
    SentenceEmbedder,
    _cosine,
)
from tests.tiny_text_models import save_bert, save_blip

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("caption-models")
    return {"blip": str(save_blip(root / "blip")), "bert": str(save_bert(root / "bert"))}


def _images(count: int) -> list[Image.Image]:
    return [Image.new("RGB", (32, 32 + 4 * n), (40 * n, 120, 30)) for n in range(count)]


def test_the_cosine_is_clamped_to_its_range() -> None:
    assert _cosine(torch.tensor([2.0, 0.0]), torch.tensor([1.0, 0.0])) == 1.0
    assert _cosine(torch.tensor([-2.0]), torch.tensor([1.0])) == -1.0
    assert _cosine(torch.tensor([0.6, 0.0]), torch.tensor([0.5, 0.0])) == pytest.approx(0.3)


def test_the_embedder_reads_at_most_its_limit_and_keeps_texts(
        models: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = SentenceEmbedder(models["bert"], device="cpu", batch_size=2)
    positions = int(embedder.model.config.max_position_embeddings)
    assert embedder.max_tokens == min(EMBED_TOKENS, positions)
    assert not embedder.is_truncated("a cat")
    assert embedder.is_truncated(" ".join(["cat"] * (embedder.max_tokens + 1)))
    calls: list[int] = []
    real = embedder.model.forward

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(int(kwargs["input_ids"].shape[0]))
        return real(*args, **kwargs)

    monkeypatch.setattr(embedder.model, "forward", counting)
    rows = embedder.embed(["a", "b", "c", "a"])
    assert calls == [2, 1]  # three distinct texts, two a batch
    assert embedder.embed(["c", "b"]).tolist() == [rows[2].tolist(), rows[1].tolist()]
    assert calls == [2, 1]


def test_the_captioner_works_in_batches(models: dict[str, str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    captioner = Captioner(models["blip"], device="cpu", batch_size=2, max_new_tokens=4)
    batches: list[int] = []
    real = captioner.model.generate

    def counting(**kwargs: Any) -> Any:
        batches.append(int(kwargs["pixel_values"].shape[0]))
        assert kwargs["do_sample"] is False and kwargs["max_new_tokens"] == 4
        return real(**kwargs)

    monkeypatch.setattr(captioner.model, "generate", counting)
    captions = captioner.captions(_images(3))
    assert batches == [2, 1]
    assert len(captions) == 3
    assert all(caption == " ".join(caption.split()) for caption in captions)


def test_empty_and_unequal_inputs(models: dict[str, str]) -> None:
    scorer = CaptionSimilarityScorer(models["blip"], models["bert"], device="cpu")
    assert scorer.score([], []) == []
    with pytest.raises(ValueError, match=r"^2 images but 1 prompts$"):
        scorer.score(_images(2), ["a cat"])
