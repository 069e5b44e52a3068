"""Input keys: the SHA-256 digests that decide whether a stored output is still valid."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

JSON = Any


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def input_key(parts: Mapping[str, JSON]) -> str:
    """A stable hash of everything that decides an output."""
    return sha256_bytes(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode())
