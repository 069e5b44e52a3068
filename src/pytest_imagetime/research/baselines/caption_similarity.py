"""Caption similarity: caption the image, then compare the caption with the prompt.

    similarity(image, prompt) = cos(S(caption(image)), S(strip_imperative(prompt)))

``caption`` is an image captioner (BLIP by default) decoding greedily; S is a sentence
embedding: the mean of the embedder's last hidden states over the real tokens (no padding),
scaled to unit length, as sentence-transformers computes it for all-MiniLM-L6-v2. The
similarity lies in [-1, 1]; identical texts give 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from PIL import Image

from .defaults import DEFAULT_CAPTIONER, DEFAULT_EMBEDDER
from .loading import batches, from_pretrained, libraries, resolve_device
from .prompts import strip_imperative

CAPTION_TOKENS = 30  # BLIP captions are one short sentence; this bounds a runaway decode
EMBED_TOKENS = 256  # sentence-transformers' cut for all-MiniLM-L6-v2
DEFAULT_BATCH = 8


class SentenceEmbedder:
    """A transformers encoder with mean pooling; embeddings kept by text."""

    def __init__(self, model: str = DEFAULT_EMBEDDER, device: str | None = None,
                 batch_size: int = 32) -> None:
        self.torch, transformers = libraries()
        self.source = model
        self.device = resolve_device(self.torch, device)
        self.batch_size = batch_size
        self.tokenizer = from_pretrained(transformers.AutoTokenizer, model,
                                         "sentence embedder's tokenizer")
        self.model = from_pretrained(transformers.AutoModel, model, "sentence embedder")
        self.model.to(self.device).eval()
        limits = [EMBED_TOKENS, int(getattr(self.model.config, "max_position_embeddings", 0)
                                    or EMBED_TOKENS)]
        self.max_tokens = min(limits)
        self._texts: dict[str, Any] = {}

    def is_truncated(self, text: str) -> bool:
        tokens = self.tokenizer(text, truncation=False, verbose=False)["input_ids"]
        return len(tokens) > self.max_tokens

    def embed(self, texts: Sequence[str]) -> Any:
        """Unit-length embeddings, one row per text, on the CPU."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._texts]
        for chunk in batches(todo, self.batch_size):
            tokens = self.tokenizer(list(chunk), padding=True, truncation=True,
                                    max_length=self.max_tokens, return_tensors="pt")
            tokens = {k: v.to(self.device) for k, v in tokens.items()}
            with self.torch.no_grad():
                hidden = self.model(**tokens).last_hidden_state.float()
            mask = tokens["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp_min(1e-9)
            mean = (mean / mean.norm(dim=-1, keepdim=True).clamp_min(1e-12)).cpu()
            for text, row in zip(chunk, mean, strict=True):
                self._texts[text] = row
        return self.torch.stack([self._texts[t] for t in texts])

    def similarity(self, a: str, b: str) -> float:
        rows = self.embed([a, b])
        return _cosine(rows[0], rows[1])


def _cosine(a: Any, b: Any) -> float:
    return min(max(float((a * b).sum()), -1.0), 1.0)


class Captioner:
    """A BLIP-style captioner: unconditional captions, greedy decoding, in batches."""

    def __init__(self, model: str = DEFAULT_CAPTIONER, device: str | None = None,
                 batch_size: int = DEFAULT_BATCH, max_new_tokens: int = CAPTION_TOKENS) -> None:
        self.torch, transformers = libraries()
        self.source = model
        self.device = resolve_device(self.torch, device)
        self.batch_size = batch_size
        self.max_new_tokens = max_new_tokens
        self.processor = from_pretrained(transformers.BlipProcessor, model,
                                         "captioner's processor")
        self.model = from_pretrained(transformers.BlipForConditionalGeneration, model,
                                     "captioner")
        self.model.to(self.device).eval()

    def captions(self, images: Sequence[Image.Image]) -> list[str]:
        out: list[str] = []
        for chunk in batches(images, self.batch_size):
            pixels = self.processor(images=[i.convert("RGB") for i in chunk],
                                    return_tensors="pt")["pixel_values"]
            with self.torch.no_grad():
                tokens = self.model.generate(pixel_values=pixels.to(self.device),
                                             max_new_tokens=self.max_new_tokens,
                                             do_sample=False, num_beams=1)
            texts = self.processor.batch_decode(tokens, skip_special_tokens=True)
            out.extend(" ".join(str(t).split()) for t in texts)
        return out


@dataclass(frozen=True)
class CaptionResult:
    score: float  # cosine similarity in [-1, 1]
    caption: str
    text: str  # the prompt as compared (see --strip)


class CaptionSimilarityScorer:
    """Caption similarity with one captioner and one embedder, each loaded once; ``strip``
    turns a prompt into the text compared with the caption."""

    def __init__(self, captioner: str = DEFAULT_CAPTIONER, embedder: str = DEFAULT_EMBEDDER,
                 device: str | None = None, batch_size: int = DEFAULT_BATCH,
                 strip: Callable[[str], str] = strip_imperative) -> None:
        self.captioner = Captioner(captioner, device, batch_size)
        self.embedder = SentenceEmbedder(embedder, device)
        self.strip = strip

    def score(self, images: Sequence[Image.Image], prompts: Sequence[str]) -> list[CaptionResult]:
        if len(images) != len(prompts):
            raise ValueError(f"{len(images)} images but {len(prompts)} prompts")
        if not images:
            return []
        captions = self.captioner.captions(images)
        texts = [self.strip(p) for p in prompts]
        caption_rows = self.embedder.embed(captions)
        text_rows = self.embedder.embed(texts)
        return [CaptionResult(_cosine(c, t), caption, text)
                for c, t, caption, text in zip(caption_rows, text_rows, captions, texts,
                                               strict=True)]

    def score_one(self, image: Image.Image, prompt: str) -> CaptionResult:
        return self.score([image], [prompt])[0]
