"""Baseline metrics to compare judges with: CLIPScore and caption similarity.

Both give one number per (image, prompt) pair and read the stored images of any suite; see
``docs/baselines.md``. torch and transformers are imported only when a scorer is built.
"""

from __future__ import annotations

from .caption_similarity import CaptionResult, CaptionSimilarityScorer, SentenceEmbedder
from .clipscore import CLIPSCORE_WEIGHT, ClipResult, ClipScorer
from .loading import BaselineError
from .prompts import strip_imperative

__all__ = [
    "CLIPSCORE_WEIGHT",
    "BaselineError",
    "CaptionResult",
    "CaptionSimilarityScorer",
    "ClipResult",
    "ClipScorer",
    "SentenceEmbedder",
    "strip_imperative",
]
