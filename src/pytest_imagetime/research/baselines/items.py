"""The stored images a baseline scores, each with the model key, case id and prompt.

Any suite that stores its images as ``<out>/<model>/images/<case>.png`` beside a generation
record ``<case>.json`` is read the same way. The prompt of an image is, in this order:

1. the record's ``prompt``: the text the model was actually given, stored whenever it differs
   from the case's prompt (a scaffold completion, a TempViz prompt);
2. the ``prompt`` column of the ``--prompts`` table, by ``case_id``;
3. the prompt of the case with that id (``--cases``, by default the packaged cases).

An image whose case prompt has changed since it was generated (its record's prompt_sha256 no
longer matches) is left out rather than scored against a prompt it was not made for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...cases.model import Case
from ...store.atomic import read_json
from ...store.paths import with_setting
from ..agreement.tables import TableError, read_table
from ..labels.runs import RunError, run_dirs
from .loading import BaselineError


@dataclass(frozen=True)
class ImageItem:
    model: str  # the key label tables use: the model spec, plus @setting outside prompt-only
    case_id: str
    image: Path
    prompt: str


@dataclass(frozen=True)
class Found:
    items: tuple[ImageItem, ...]
    without_prompt: tuple[str, ...]  # "<model>/<case>" of images with no prompt found
    changed: tuple[str, ...]  # ... whose case prompt changed since generation


def model_dirs(paths: Sequence[str]) -> list[Path]:
    """Model directories (holding images/) from model directories, run directories,
    report.json files or output directories of either."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise BaselineError(f"{raw}: no such file or directory")
        if (path / "images").is_dir():
            found.append(path)
        elif path.is_dir() and any(p.is_dir() for p in path.glob("*/images")):
            found.extend(p.parent for p in sorted(path.glob("*/images")) if p.is_dir())
        else:
            try:
                found.extend(run.parent for run in run_dirs([raw]))
            except RunError:
                raise BaselineError(f"{raw}: no images/ folder and no run (report.json) "
                                    "in it") from None
    return list(dict.fromkeys(found))


def read_prompts(path: Path) -> dict[str, str]:
    """A ``case_id,prompt`` table (CSV or JSONL) as prompts by case id."""
    try:
        table = read_table(path)
        table.require("case_id", "prompt")
    except TableError as exc:
        raise BaselineError(str(exc)) from None
    return {row["case_id"]: row["prompt"] for row in table.rows if row["prompt"]}


def model_key(folder: Path, record: Mapping[str, Any] | None) -> str:
    """The model as label tables key it; a dense grid keeps its @grid so keys stay unique."""
    if not record or not isinstance(record.get("model"), str):
        return folder.name
    grid = record.get("grid")
    shape = (int(grid[0]), int(grid[1])) if isinstance(grid, list) and len(grid) == 2 else (2, 2)
    return with_setting(record["model"], str(record.get("setting", "prompt-only")), shape)


def find_items(paths: Sequence[str], prompts: Mapping[str, str],
               cases: Callable[[], Mapping[str, Case]]) -> Found:
    """Every stored image under ``paths`` with its prompt; ``cases`` is called only when
    some image needs a case's prompt."""
    items: list[ImageItem] = []
    without: list[str] = []
    changed: list[str] = []
    loaded: Mapping[str, Case] | None = None
    seen: dict[tuple[str, str], Path] = {}
    for folder in model_dirs(paths):
        for image in sorted((folder / "images").glob("*.png")):
            case_id = image.stem
            record = read_json(image.with_suffix(".json"))
            record = record if isinstance(record, dict) else None
            model = model_key(folder, record)
            prompt = record.get("prompt") if record else None
            if not isinstance(prompt, str) or not prompt:
                prompt = prompts.get(case_id)
            if prompt is None:
                loaded = cases() if loaded is None else loaded
                case = loaded.get(case_id)
                if case is None:
                    without.append(f"{model}/{case_id}")
                    continue
                stored = record.get("prompt_sha256") if record else None
                if stored and stored != case.prompt_hash:
                    changed.append(f"{model}/{case_id}")
                    continue
                prompt = case.prompt
            if (model, case_id) in seen:
                raise BaselineError(f"two images for model {model}, case {case_id}: "
                                    f"{seen[model, case_id]} and {image}")
            seen[model, case_id] = image
            items.append(ImageItem(model, case_id, image, prompt))
    return Found(tuple(items), tuple(without), tuple(changed))
