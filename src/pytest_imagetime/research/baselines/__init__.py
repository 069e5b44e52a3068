"""Baseline metrics to compare judges with: CLIPScore (``clipscore.py``) and caption similarity
(``caption_similarity.py``).

Both give one number per (image, prompt) pair and read the stored images of any suite; see
``docs/baselines.md``. torch and transformers are imported only when a scorer is built.
"""
