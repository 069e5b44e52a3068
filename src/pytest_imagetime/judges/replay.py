"""Judge ``replay:RUN_DIR``: the judgments stored by an earlier run, scored again.

For re-aggregating with new caps, for CI without keys, and for tests. The stored judgment
must belong to the same sheet (same image bytes) and the same case text; otherwise the item
is an error, because a replayed score for a different image would be a made-up one.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from ..backends.registry import spec_path
from ..rubric.facts import RUBRIC_VERSION
from ..rubric.judgment import JudgeError, Judgment
from .base import Judge, JudgeOptions, SheetToJudge


class ReplayJudge(Judge):
    cpu_bound = True  # reads stored judgments: nothing to overlap in the judge pool

    def __init__(self, argument: str | None = None, *,
                 options: JudgeOptions | None = None) -> None:
        if not argument:
            raise ValueError("the replay judge needs a run directory: "
                             "--imagetime-judge=replay:reports/MODEL/JUDGE")
        self.source = spec_path(argument, options.spec_dir if options else None).resolve()
        if not (self.source / "judgments").is_dir():
            raise ValueError(f"replay: {self.source} holds no judgments/ directory (give a run "
                             "directory such as reports/procedural/vlm)")

    @property
    def name(self) -> str:
        return "replay"

    @property
    def scored_dims(self) -> frozenset[str]:
        return frozenset()  # whatever the original judge scored; it was validated when stored

    def config(self) -> Mapping[str, Any]:
        return {"judge": "replay", "source": str(self.source), "judge_model": self._origin}

    @functools.cached_property
    def _origin(self) -> str:
        """The judge model behind the stored judgments: replayed scores stay that judge's.
        Looked up once: config() is asked for on every item."""
        for path in sorted((self.source / "judgments").glob("*.json"))[:1]:
            try:
                return str(json.loads(path.read_text(encoding="utf-8"))["judgment"]["judge_model"])
            except (OSError, ValueError, KeyError, TypeError):
                break
        return "unknown"

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        path = self.source / "judgments" / f"{sheet.case.id}.json"
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            judgment = Judgment.from_json(record["judgment"])
        except FileNotFoundError:
            raise JudgeError(f"no stored judgment for {sheet.case.id!r}: expected {path}"
                             ) from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise JudgeError(f"cannot read the stored judgment {path}: {exc}") from None
        if record.get("image_sha256") != sheet.image_sha256:
            raise JudgeError(f"the stored judgment {path} is for another image than "
                             f"{sheet.path}; replay needs the same sheets")
        if record.get("case_spec_sha256") != sheet.case.spec_hash:
            stored_rubric = record.get("rubric_version")
            if stored_rubric != RUBRIC_VERSION:  # the case's form changed with the rubric
                raise JudgeError(f"the stored judgment {path} was made under {stored_rubric}, "
                                 f"this is {RUBRIC_VERSION}: its answers are not mixed with "
                                 f"this rubric's; judge the sheets again")
            raise JudgeError(f"the stored judgment {path} was made for another version of "
                             f"case {sheet.case.id!r}")
        return judgment
