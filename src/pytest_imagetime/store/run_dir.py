"""The run directory: stored images and judgments, reused when their inputs are unchanged.

Layout under the output directory (``reports/`` by default)::

    <model>[@<setting>][@grid<R>x<C>]/images/<case>.png   the sheet, as generated
    <model>[@<setting>]/images/<case>.json      its generation record
    <model>[@<setting>]/<judge>/judgments/<case>.json
    <model>[@<setting>]/<judge>/report.json     the aggregate report of the last session

Images are shared by every judge of a model; a run directory is one model x one judge.
Every write goes to a temporary file that is then renamed, and a record is written only
after the file it describes, so a killed run never leaves a half file that a later run trusts.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import itertools
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..rubric.facts import Setting

if TYPE_CHECKING:  # Pillow is imported at the first image read: collecting never loads it
    from PIL import Image

JSON = Any


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def input_key(parts: Mapping[str, JSON]) -> str:
    """A stable hash of everything that decides an output."""
    return sha256_bytes(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode())


def atomic_write_bytes(path: Path, data: bytes) -> None:
    with _replacing(path) as fd, os.fdopen(fd, "wb") as fh:
        fh.write(data)


def atomic_write_text(path: Path, chunks: Iterable[str]) -> None:
    """Write text made piece by piece (a report of every item) without holding all of it:
    buffered, to a temporary file renamed into place. 64 KiB writes: a larger buffer saves
    no time, and a 1 MiB one was resident at the session's end, its memory peak."""
    with _replacing(path) as fd, os.fdopen(fd, "w", encoding="utf-8", buffering=1 << 16) as fh:
        for chunk in chunks:
            fh.write(chunk)


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[int]:
    """An open file that replaces ``path`` once the block closes it; removed, with
    ``path`` untouched, when the block fails."""
    fd, tmp = _temporary_file(path)
    try:
        yield fd
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_TEMPORARY_NUMBERS = itertools.count()


def _temporary_file(path: Path) -> tuple[int, str]:
    """A new, open file beside ``path`` for its next content, and its name.

    The name is unique to this process (its host, pid and a counter that threads share), so
    an exclusive create nearly always succeeds at once: mkstemp's random names and the chmod
    its 0600 needed took a fifth of a small record's write. A name left by a killed process
    that had the same pid is skipped. The mode is what ``open`` gives (0666 less the umask).
    The host and pid let a later run tell a killed writer's file from a live one's
    (``remove_abandoned_temporaries``).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = os.path.join(path.parent, f".{path.name}.{_host()}.{os.getpid()}-"
                                        f"{next(_TEMPORARY_NUMBERS)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue


@functools.cache
def _host() -> str:
    from .run_lock import host_name  # at the first write: collecting never needs it

    return host_name()


# Lazy: the shortest name before it, so that a host is found where there is one.
_TEMPORARY = re.compile(r"^\..+?\.(?:(?P<host>[A-Za-z0-9_-]+)\.)?(?P<pid>\d+)-\d+\.tmp$")
# A write takes well under a second: a temporary file this old has no live writer, wherever
# it was written.
ABANDONED_AFTER_S = 3600.0


def remove_abandoned_temporaries(trees: Iterable[Path], folders: Iterable[Path] = ()) -> int:
    """Remove the temporary files that killed writers left in ``trees`` (and below) and in
    ``folders`` (not below): those of a process no longer running on this host, and any
    older than ``ABANDONED_AFTER_S``. A live writer's file (this session's, or a concurrent
    one's) is left alone. Returns how many were removed."""
    import time

    from .run_lock import process_alive

    here, now, removed = _host(), time.time(), 0
    alive: dict[int, bool] = {}
    shallow: Iterator[tuple[str, list[str], list[str]]] = (
        (str(f), [], os.listdir(f)) for f in folders if f.is_dir())
    for root, _, names in itertools.chain(*(os.walk(tree) for tree in trees), shallow):
        for name in names:
            found = _TEMPORARY.match(name)
            if found is None:
                continue
            path = os.path.join(root, name)
            pid = int(found["pid"])
            if found["host"] == here and pid not in alive:
                alive[pid] = process_alive(pid)
            dead = found["host"] == here and not alive[pid]
            try:
                if dead or now - os.stat(path).st_mtime > ABANDONED_AFTER_S:
                    os.unlink(path)
                    removed += 1
            except OSError:
                continue  # renamed into place or removed meanwhile
    return removed


def atomic_write_json(path: Path, data: JSON) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())


def read_json(path: Path) -> JSON | None:
    """The parsed file, or None when it is missing or unreadable (then it is redone)."""
    try:
        # Bytes: json takes UTF-8 itself, without a text wrapper around the file.
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def with_setting(name: str, setting: str, grid: tuple[int, int] = (2, 2)) -> str:
    """A model spec or directory as runs name it: ``@scaffold`` added outside prompt-only,
    ``@grid4x2`` for a dense grid."""
    named = name if setting == "prompt-only" else f"{name}@{setting}"
    return named if grid == (2, 2) else f"{named}@grid{grid[0]}x{grid[1]}"


def dir_slug(text: str) -> str:
    """A directory name for a model or judge spec: 'files:/data/x' -> 'files-data-x'."""
    slug = re.sub(r"[^A-Za-z0-9._@-]+", "-", text).strip("-.")
    return slug[:80] or "default"


@dataclass(frozen=True)
class RunPaths:
    """Where one model x judge x setting keeps its files."""

    out: Path
    model: str
    judge: str
    setting: Setting
    grid: tuple[int, int] = (2, 2)

    # Cached: every item asks for them several times.
    @functools.cached_property
    def model_dir(self) -> Path:
        return self.out / with_setting(dir_slug(self.model), self.setting, self.grid)

    @functools.cached_property
    def run_dir(self) -> Path:
        return self.model_dir / dir_slug(self.judge)

    @functools.cached_property
    def _images(self) -> Path:
        return self.model_dir / "images"

    @functools.cached_property
    def _judgments(self) -> Path:
        return self.run_dir / "judgments"

    def image(self, case_id: str) -> Path:
        return self._images / f"{case_id}.png"

    def image_record(self, case_id: str) -> Path:
        return self._images / f"{case_id}.json"

    def judgment(self, case_id: str) -> Path:
        return self._judgments / f"{case_id}.json"

    @property
    def report(self) -> Path:
        return self.run_dir / "report.json"


def encode_png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    # compress_level 1: PNG stays lossless; level 6 costs several times the CPU for ~10% size.
    image.save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


@dataclass(frozen=True)
class StoredSheet:
    """A stored sheet that matches its record: its file, digest and record, and its bytes
    when checking it meant reading them."""

    path: Path
    sha256: str
    record: dict[str, JSON]
    data: bytes | None

    def read(self) -> bytes:
        """The file's bytes; raises ValueError when they are no longer the recorded ones."""
        data = self.path.read_bytes() if self.data is None else self.data
        if self.data is None and sha256_bytes(data) != self.sha256:
            raise ValueError(f"the stored sheet {self.path} changed after it was checked")
        return data


def find_stored_sheet(paths: RunPaths, case_id: str, key: str) -> StoredSheet | None:
    """The stored sheet if its record matches ``key`` and the file is the one recorded, else
    None. A file with the size and modification time recorded when it was written is taken
    as written without being read (as make and git do): a resume of large sheets then reads
    none of them. Any other file is read and its digest checked."""
    record = read_json(paths.image_record(case_id))
    if not isinstance(record, dict) or record.get("input_key") != key:
        return None
    digest = record.get("image_sha256")
    if not isinstance(digest, str):
        return None
    path = paths.image(case_id)
    try:
        if record.get("image_file") == _file_facts(path):
            return StoredSheet(path, digest, record, None)
        data = path.read_bytes()
    except OSError:
        return None
    if sha256_bytes(data) != digest:
        return None
    return StoredSheet(path, digest, record, data)


def _file_facts(path: Path) -> dict[str, int]:
    """What tells a written file from a changed one without reading it."""
    status = path.stat()
    return {"bytes": status.st_size, "mtime_ns": status.st_mtime_ns}


def load_stored_image(paths: RunPaths, case_id: str, key: str) -> tuple[Image.Image, str,
                                                                      dict[str, JSON]] | None:
    """The stored sheet, decoded, if its record matches ``key`` and the file is intact."""
    found = find_stored_sheet(paths, case_id, key)
    if found is None:
        return None
    try:
        return decode_png(found.read()), found.sha256, found.record
    except (OSError, ValueError):
        return None


def decode_png(data: bytes) -> Image.Image:
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def rgb_png(data: bytes | None) -> bool:
    """Whether ``data`` is an 8-bit RGB PNG: such a file is stored as delivered, since
    decoding and encoding it again would give the same pixels at a cost."""
    if data is None or not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return False
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as opened:
            return opened.format == "PNG" and opened.mode == "RGB"
    except (OSError, ValueError):
        return False


def store_image(paths: RunPaths, case_id: str, image: Image.Image,
                record: dict[str, JSON], data: bytes | None = None) -> str:
    """Write the sheet, then its record; ``data``, when given, is the sheet already encoded
    as an RGB PNG (a backend's or a file's own bytes) and is written as is."""
    if data is None:
        data = encode_png(image)
    digest = sha256_bytes(data)
    path = paths.image(case_id)
    atomic_write_bytes(path, data)
    atomic_write_json(paths.image_record(case_id),
                      {**record, "image_sha256": digest, "image_file": _file_facts(path)})
    return digest


def load_stored_judgment(paths: RunPaths, case_id: str, key: str) -> dict[str, JSON] | None:
    record = read_json(paths.judgment(case_id))
    if not isinstance(record, dict) or record.get("input_key") != key:
        return None
    return record


def store_judgment(paths: RunPaths, case_id: str, record: dict[str, JSON]) -> None:
    atomic_write_json(paths.judgment(case_id), record)
