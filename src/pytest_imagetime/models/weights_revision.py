"""Which weights a spec names, as a value for the image's input key: a Hub repository's commit
or a digest of a local folder's or file's weight files.

A Hub id resolves to the commit its revision (``main`` unless ``revision=`` names another)
points at in the local Hugging Face cache, else, where the run may make calls and the Hub is
not switched off (``HF_HUB_OFFLINE``), to the commit the Hub names. A local path resolves to
a digest of the names, sizes and modification times of its files (reading gigabytes of
weights would cost minutes; replacing a file changes its size or time).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

COMMIT = re.compile(r"[0-9a-f]{40}")
UNRESOLVED = "unresolved"  # neither in the cache nor reachable: the load fails the same way
HUB_TIMEOUT_S = 10.0


def local_revision(path: Path) -> str:
    """``local-`` and a digest of every file's relative name, size and modification time
    (hidden files and folders, such as a download's ``.cache``, left out)."""
    digest = hashlib.sha256()
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts))
    for file in files:
        stat = file.stat()  # follows links: a Hub snapshot's files are links to its blobs
        name = file.name if file == path else file.relative_to(path).as_posix()
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return f"local-{digest.hexdigest()[:16]}"


def hub_revision(repo: str, revision: str | None, online: bool) -> str:
    """The commit ``repo`` at ``revision`` resolves to: a full commit as given, the cache's
    ref, else the Hub's answer where ``online``; ``unresolved`` when none answers."""
    if revision and COMMIT.fullmatch(revision):
        return revision
    from huggingface_hub import constants

    folder = Path(constants.HF_HUB_CACHE) / f"models--{repo.replace('/', '--')}"
    ref = folder / "refs" / (revision or "main")
    if ref.is_file():
        return ref.read_text(encoding="utf-8").strip()
    if revision and (folder / "snapshots" / revision).is_dir():
        return revision  # a short commit the cache holds under that name
    if not online or constants.HF_HUB_OFFLINE:
        return UNRESOLVED
    from huggingface_hub import HfApi

    try:
        sha = HfApi().model_info(repo, revision=revision, timeout=HUB_TIMEOUT_S).sha
    except Exception:  # no network, no such repository, a gated one without a token
        return UNRESOLVED
    return sha or UNRESOLVED
