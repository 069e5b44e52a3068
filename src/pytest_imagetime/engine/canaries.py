"""Judge drift canaries: fixed procedural sheets, judged at the start of a run.

The same sheets (good, copied and shuffled renderings of two packaged cases) are judged
every time, never reused from the store, and their scores go into the report: a hosted
judge that changes under the same model name shows up as canaries that moved.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from ..cases.loading import builtin_cases_dir, case_files, load_case_file
from ..cases.model import Case
from ..judges.base import Judge, SheetToJudge
from ..models.base import GenerationRequest
from ..models.procedural import ProceduralModel
from ..rubric.caps import apply_caps, case_scopes, layout_labels
from ..rubric.facts import Setting
from ..rubric.judgment import validate_judgment
from ..scoring.item import score_item
from ..store.sheets import encode_png

CANARY_DOMAINS = ("Kitchen", "Constraints")
CANARY_VARIANTS = ("good", "copied", "shuffled")
CANARY_SIZE = 512
CANARY_SEED = 20260606
NOT_STORED = Path("canary.png")  # canaries are judged from memory, never from the store


def canary_cases() -> list[Case]:
    """The first case (by id) of each canary domain among the packaged cases."""
    cases = [c for f in case_files([builtin_cases_dir()]) for c in load_case_file(f)]
    chosen = []
    for domain in CANARY_DOMAINS:
        members = sorted((c for c in cases if c.domain == domain), key=lambda c: c.id)
        chosen.extend(members[:1])
    return chosen


def run_canaries(judge: Judge, setting: Setting) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    for case in canary_cases():
        request = GenerationRequest(case=case, setting=setting, size=CANARY_SIZE,
                                    seed=CANARY_SEED)
        for variant in CANARY_VARIANTS:
            image = ProceduralModel(variant).generate(request=request).image
            digest = hashlib.sha256(encode_png(image)).hexdigest()
            entry: dict[str, Any] = {"case_id": case.id, "variant": variant,
                                     "image_sha256": digest}
            try:
                judgment = judge.judge(sheet=SheetToJudge(case, setting, image, path=NOT_STORED,
                                                          image_sha256=digest))
                validate_judgment(judgment, case, setting, judge.scored_dims)
            except Exception as exc:  # a canary that fails is reported, not fatal
                entry["error"] = f"{type(exc).__name__}: {exc}"
                results.append(entry)
                continue
            labels = {*judgment.labels, *layout_labels(judgment.layout, setting)}
            capped, caps = apply_caps(judgment.scores, labels, case_scopes(case, setting))
            scores = score_item(capped)
            entry.update(judge_model=judgment.judge_model, overall=scores.overall,
                         c_mean=scores.c_mean, d_mean=scores.d_mean, scores=capped,
                         labels=sorted(labels), caps=[c.rule for c in caps],
                         cost_usd=judgment.cost_usd, date=judgment.date)
            results.append(entry)
    return results
