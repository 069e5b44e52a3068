"""The models the baselines load unless told otherwise: the TempViz paper's."""

from __future__ import annotations

DEFAULT_CLIP = "laion/CLIP-ViT-bigG-14-laion2B-39B-b160k"
DEFAULT_CAPTIONER = "Salesforce/blip-image-captioning-base"
DEFAULT_EMBEDDER = "sentence-transformers/all-MiniLM-L6-v2"
