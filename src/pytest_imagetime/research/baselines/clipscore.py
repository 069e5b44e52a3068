"""CLIPScore (Hessel et al., 2021): how well an image matches its prompt, for a CLIP model.

    CLIPScore(image, text) = w * max(cos(E_image, E_text), 0),   w = 2.5

with E the projected embeddings of the CLIP model. The score lies in [0, w]; the raw cosine
(in [-1, 1]) is kept beside it: the TempViz paper correlates the cosine, and the clipping at 0
could change a correlation. The text is scored as the caller gives it (the command strips the
imperative first, see ``--strip``): the reference implementation's "A photo depicts" prefix,
meant for captions, is not added to prompts.

CLIP's text encoder reads at most 77 tokens (its position table); longer texts are cut to their
first 77 tokens, so for a long prompt the score reflects its opening only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from .defaults import DEFAULT_CLIP
from .loading import batches, features, from_pretrained, libraries, resolve_device

CLIPSCORE_WEIGHT = 2.5
DEFAULT_BATCH = 16


@dataclass(frozen=True)
class ClipResult:
    score: float  # w * max(cosine, 0)
    cosine: float


class ClipScorer:
    """One CLIP model, loaded once, scoring (image, text) pairs in batches.

    Deterministic: the model runs in eval mode without gradients, and text embeddings are
    kept by text, so a prompt shared by many images is encoded once.
    """

    def __init__(self, model: str = DEFAULT_CLIP, device: str | None = None,
                 batch_size: int = DEFAULT_BATCH, weight: float = CLIPSCORE_WEIGHT) -> None:
        self.torch, transformers = libraries()
        self.source = model
        self.device = resolve_device(self.torch, device)
        self.batch_size = batch_size
        self.weight = weight
        self.processor = from_pretrained(transformers.CLIPProcessor, model, "CLIP processor")
        self.model = from_pretrained(transformers.CLIPModel, model, "CLIP model")
        self.model.to(self.device).eval()
        self.max_tokens = int(self.model.config.text_config.max_position_embeddings)
        self._texts: dict[str, Any] = {}

    def token_count(self, text: str) -> int:
        """Tokens of ``text`` with CLIP's start and end tokens, before any cut."""
        return len(self.processor.tokenizer(text, truncation=False, verbose=False)["input_ids"])

    def is_truncated(self, text: str) -> bool:
        return self.token_count(text) > self.max_tokens

    def text_embeddings(self, texts: Sequence[str]) -> Any:
        """Unit-length text embeddings, one row per text, on the CPU."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._texts]
        for chunk in batches(todo, self.batch_size):
            tokens = self.processor.tokenizer(list(chunk), padding=True, truncation=True,
                                              max_length=self.max_tokens, return_tensors="pt")
            with self.torch.no_grad():
                out = self.model.get_text_features(
                    input_ids=tokens["input_ids"].to(self.device),
                    attention_mask=tokens["attention_mask"].to(self.device))
            for text, row in zip(chunk, self._unit(features(out)), strict=True):
                self._texts[text] = row
        return self.torch.stack([self._texts[t] for t in texts])

    def image_embeddings(self, images: Sequence[Image.Image]) -> Any:
        """Unit-length image embeddings, one row per image, on the CPU."""
        rows = []
        for chunk in batches(images, self.batch_size):
            pixels = self.processor.image_processor(
                images=[i.convert("RGB") for i in chunk], return_tensors="pt")["pixel_values"]
            with self.torch.no_grad():
                out = self.model.get_image_features(pixel_values=pixels.to(self.device))
            rows.append(self._unit(features(out)))
        return self.torch.cat(rows)

    def _unit(self, embeddings: Any) -> Any:
        embeddings = embeddings.float().cpu()
        return embeddings / embeddings.norm(dim=-1, keepdim=True).clamp_min(1e-12)

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> list[ClipResult]:
        """CLIPScore of each image against the text at the same position."""
        if len(images) != len(texts):
            raise ValueError(f"{len(images)} images but {len(texts)} texts")
        if not images:
            return []
        cosines = (self.image_embeddings(images) * self.text_embeddings(texts)).sum(dim=-1)
        return [ClipResult(self.weight * max(c, 0.0), c)
                for c in (min(max(float(v), -1.0), 1.0) for v in cosines)]

    def score_one(self, image: Image.Image, text: str) -> ClipResult:
        return self.score([image], [text])[0]
