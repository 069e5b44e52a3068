"""The random baseline's choices that both its computation and the command's options name."""

from __future__ import annotations

DISTRIBUTIONS = ("uniform", "prior")
DEFAULT_SEED = 0
