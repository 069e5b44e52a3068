"""Resume: which stored sheets, images and judgments a run takes instead of drawing or
judging again.

A stored file is reused when its record names the input key the run computes now and the
file is the one recorded, unless the run is told to redo it (``--imagetime-regenerate`` for
images, ``--imagetime-rejudge`` for judgments). A judgment stored while the judge's price was
part of its key is reused under the key without it. The engine (both suites), the batch
judge, the dry-run estimate and replay ask here; what goes into a key is the suite's.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from .atomic import read_json
from .judgments import load_stored_judgment, store_judgment
from .keys import input_key
from .paths import RunPaths
from .sheets import StoredSheet, find_stored_sheet, load_stored_image

if TYPE_CHECKING:
    from PIL import Image

    from .keys import JSON

PRICE_KEYS = frozenset({"price_usd_per_mtok"})  # judge configuration that is only a price


def reusable_sheet(paths: RunPaths, name: str, key: str, *, regenerate: bool
                   ) -> StoredSheet | None:
    """The stored image ``name`` when it was drawn from these inputs (``key``) and is intact,
    not decoded; None when it is drawn (again)."""
    return None if regenerate else find_stored_sheet(paths, name, key)


def reusable_image(paths: RunPaths, name: str, key: str, *, regenerate: bool
                   ) -> tuple[Image.Image, str, dict[str, JSON]] | None:
    """``reusable_sheet`` decoded, with its digest and record; None also when it does not
    decode."""
    return None if regenerate else load_stored_image(paths, name, key)


def judgment_name(case_id: str, repeat: int) -> str:
    """The name a judgment repeat is stored under: the case id, then ``<id>@r<n>``."""
    return case_id if repeat == 0 else f"{case_id}@r{repeat + 1}"


def repeat_key(key: str, repeat: int) -> str:
    """A repeat's input key: the judgment's own for the first, one of its own for the rest."""
    return key if repeat == 0 else input_key({"judgment": key, "repeat": repeat})


def reusable_judgment(paths: RunPaths, name: str, key: str, *, rejudge: bool,
                      repeat: int | None = None, write: bool = True
                      ) -> dict[str, JSON] | None:
    """The stored judgment ``name`` when it was made from these inputs (``key``); None when
    the judge is asked (again). With ``repeat``, a judgment stored while the price was part
    of its key is taken too (``repriced_judgment``)."""
    if rejudge:
        return None
    record = load_stored_judgment(paths, name, key)
    if record is None and repeat is not None:
        record = repriced_judgment(paths, name, key, repeat, write)
    return record


def repriced_judgment(paths: RunPaths, name: str, key: str, repeat: int, write: bool = True
                      ) -> dict[str, Any] | None:
    """A judgment stored while the price was part of its key, whose inputs are otherwise
    this key's: taken, and (``write``) stored again under this key, once, so a new price
    table never pays for it again."""
    record = read_json(paths.judgment(name))
    config = record.get("judge_config") if isinstance(record, dict) else None
    if not isinstance(config, dict) or not PRICE_KEYS & config.keys():
        return None
    assert isinstance(record, dict)
    unpriced = repeat_key(input_key({
        "judge": {k: v for k, v in config.items() if k not in PRICE_KEYS},
        "image_sha256": record.get("image_sha256"),
        "case_spec_sha256": record.get("case_spec_sha256"), "setting": record.get("setting"),
        "rubric_version": record.get("rubric_version")}), repeat)
    if unpriced != key:
        return None
    record["input_key"] = key
    judgment = record.get("judgment")
    if config.get("price_usd_per_mtok") is None and isinstance(judgment, dict) \
            and judgment.get("tokens_in"):
        judgment["cost_usd"] = None  # stored as 0 when its price was unknown: unknown it is
    if write:
        with contextlib.suppress(OSError):  # taken this time all the same; looked at again
            store_judgment(paths, name, record)
    return record
