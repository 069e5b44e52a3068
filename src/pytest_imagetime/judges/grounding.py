"""Grounded evidence per panel: the prompt's subjects found by an open-vocabulary detector.

UI2V-Bench's instance-level pipeline, adapted to motion sheets: a language model parses the
prompt into subjects and actions (strict JSON ``{"subject": [...], "action": [...]}``), a
detector (OWLv2 or Grounding DINO through transformers) grounds each subject in each panel,
and the boxes become objective findings: a subject missing from a panel, duplicated, or not
displaced across panels. Findings that contradict what the case allows become evidence
labels, which fire the rubric's evidence caps (docs/ui2v.md).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..cases.model import STAGES, Case
from ..rubric.caps import case_scopes
from ..rubric.facts import Setting

if TYPE_CHECKING:
    from PIL import Image

OWLV2_ID = "google/owlv2-base-patch16-ensemble"
GROUNDING_DINO_ID = "IDEA-Research/grounding-dino-tiny"
DETECTORS = {"owlv2": OWLV2_ID, "grounding-dino": GROUNDING_DINO_ID}
# Score thresholds: OWLv2's model-card example, Grounding DINO's box/text defaults.
OWLV2_THRESHOLD = 0.3
DINO_BOX_THRESHOLD, DINO_TEXT_THRESHOLD = 0.35, 0.25
SAME_OBJECT_IOU = 0.5  # boxes of one subject overlapping this much are one object
# A subject moved when its box centre shifted this share of the panel side from t1.
DISPLACEMENT_MIN = 0.05

PARSE_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["subject", "action"],
    "properties": {"subject": {"type": "array", "items": {"type": "string"}},
                   "action": {"type": "array", "items": {"type": "string"}}}}
PARSE_SYSTEM = """You are a prompt analyzer. Parse the prompt into its subjects and actions. \
Each subject is a short noun phrase with its modifiers (e.g. "the red jug"), as a detector \
would be asked to find it; each action is one complete action description. Return JSON \
{"subject": [...], "action": [...]} and nothing else."""

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class Detection:
    panel: str  # t1..t4
    subject: str
    score: float
    box: Box  # left, top, right, bottom in the panel's pixels


class Detector(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def model_id(self) -> str: ...

    def detect(self, panels: Sequence[Image.Image], subjects: Sequence[str]
               ) -> list[Detection]: ...


INSTALL_HINT = "pip install 'pytest-imagetime[diffusers]'"


def _transformers() -> Any:
    """transformers untyped (its stubs are partial); a missing package says how to install."""
    try:
        importlib.import_module("torch")
        return importlib.import_module("transformers")
    except ImportError as exc:
        raise ValueError(f"the vlm-instance judge's detector needs torch and transformers "
                         f"({exc.name or 'one of them'} is not installed): "
                         f"{INSTALL_HINT}") from None


def _torch() -> Any:
    return importlib.import_module("torch")


def _load(cls: Any, model_id: str) -> Any:
    """``cls.from_pretrained(model_id)``, a failure as one line naming the model."""
    if model_id.startswith(("/", ".", "~")) and not Path(model_id).expanduser().is_dir():
        # transformers would read it as a malformed Hub id and say only that.
        raise ValueError(f"cannot load the detector {model_id}: no such folder; give a "
                         f"folder written by save_pretrained or a Hub id (NAME=FOLDER)")
    try:
        return cls.from_pretrained(model_id)
    except Exception as exc:  # hub, file and config errors have no common base class
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ValueError(f"cannot load the detector {model_id}: {reason} (without network, "
                         f"give a folder written by save_pretrained: NAME=FOLDER)") from None


class OwlDetector:
    """OWLv2: every subject a text query, asked of every panel."""

    name = "owlv2"

    def __init__(self, model_id: str = OWLV2_ID, threshold: float = OWLV2_THRESHOLD) -> None:
        tf = _transformers()
        self.model_id = model_id
        self.threshold = threshold
        self.processor = _load(tf.Owlv2Processor, model_id)
        self.model = _load(tf.Owlv2ForObjectDetection, model_id).eval()

    def detect(self, panels: Sequence[Image.Image], subjects: Sequence[str]
               ) -> list[Detection]:
        if not subjects:
            return []
        queries = [list(subjects)] * len(panels)
        inputs = self.processor(text=queries, images=list(panels), return_tensors="pt",
                                padding=True, truncation=True)
        with _torch().no_grad():
            outputs = self.model(**inputs)
        # OWLv2 pads images to a square: boxes are relative to the padded side.
        sides = [(max(p.size), max(p.size)) for p in panels]
        found = self.processor.post_process_grounded_object_detection(
            outputs=outputs, threshold=self.threshold, target_sizes=sides, text_labels=queries)
        return [Detection(stage, subjects[int(label)], float(score), _box(box))
                for stage, result in zip(STAGES, found, strict=False)
                for score, label, box in zip(result["scores"], result["labels"],
                                             result["boxes"], strict=True)]


class GroundingDinoDetector:
    """Grounding DINO: one text query per subject (``"the red jug."``), so that every box
    belongs to the subject asked for."""

    name = "grounding-dino"

    def __init__(self, model_id: str = GROUNDING_DINO_ID,
                 threshold: float = DINO_BOX_THRESHOLD,
                 text_threshold: float = DINO_TEXT_THRESHOLD) -> None:
        tf = _transformers()
        self.model_id = model_id
        self.threshold = threshold
        self.text_threshold = text_threshold
        self.processor = _load(tf.GroundingDinoProcessor, model_id)
        self.model = _load(tf.GroundingDinoForObjectDetection, model_id).eval()

    def detect(self, panels: Sequence[Image.Image], subjects: Sequence[str]
               ) -> list[Detection]:
        out = []
        for subject in subjects:
            text = subject.strip().rstrip(".").lower() + "."
            inputs = self.processor(images=list(panels), text=[text] * len(panels),
                                    return_tensors="pt", padding=True)
            with _torch().no_grad():
                outputs = self.model(**inputs)
            found = self.processor.post_process_grounded_object_detection(
                outputs, input_ids=inputs["input_ids"], threshold=self.threshold,
                text_threshold=self.text_threshold,
                target_sizes=[(p.height, p.width) for p in panels])
            out += [Detection(stage, subject, float(score), _box(box))
                    for stage, result in zip(STAGES, found, strict=False)
                    for score, box in zip(result["scores"], result["boxes"], strict=True)]
        return out


def _box(values: Any) -> Box:
    left, top, right, bottom = (float(v) for v in values.tolist())
    return (left, top, right, bottom)


def load_detector(argument: str | None) -> Detector:
    """``owlv2`` (the default) or ``grounding-dino``, optionally ``=MODEL`` (a hub id or a
    local folder) instead of the documented checkpoint."""
    name, _, model = (argument or "owlv2").partition("=")
    if name not in DETECTORS:
        raise ValueError(f"unknown detector {name!r}; use one of {', '.join(DETECTORS)}, "
                         f"optionally =MODEL (e.g. owlv2={OWLV2_ID})")
    if name == "owlv2":
        return OwlDetector(model or OWLV2_ID)
    return GroundingDinoDetector(model or GROUNDING_DINO_ID)


# ---------------------------------------------------------------- evidence


def _iou(a: Box, b: Box) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    union = ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)
    return inter / union if union > 0 else 0.0


def distinct_objects(found: Sequence[Detection]) -> list[Detection]:
    """Greedy non-maximum suppression: the best box of each overlapping group."""
    kept: list[Detection] = []
    for d in sorted(found, key=lambda d: -d.score):
        if all(_iou(d.box, k.box) < SAME_OBJECT_IOU for k in kept):
            kept.append(d)
    return kept


@dataclass(frozen=True)
class Track:
    """One subject across the four panels."""

    subject: str
    counts: tuple[int, ...]  # objects found per panel, t1..t4
    centres: tuple[tuple[float, float] | None, ...]  # best box centre, share of panel side
    shift: float | None  # largest centre shift from t1, share of the panel side

    def to_json(self) -> dict[str, Any]:
        return {"subject": self.subject, "counts": list(self.counts),
                "centres": [None if c is None else [round(c[0], 4), round(c[1], 4)]
                            for c in self.centres],
                "shift": None if self.shift is None else round(self.shift, 4)}


@dataclass(frozen=True)
class Evidence:
    detector: str
    subjects: tuple[str, ...]
    actions: tuple[str, ...]
    tracks: tuple[Track, ...]
    findings: tuple[str, ...]  # every finding, allowed by the case or not
    labels: tuple[str, ...]  # the evidence labels: findings the case does not allow
    counts_fixed: bool  # whether the case says counts must not change

    def to_json(self) -> dict[str, Any]:
        return {"detector": self.detector, "subjects": list(self.subjects),
                "actions": list(self.actions), "tracks": [t.to_json() for t in self.tracks],
                "findings": list(self.findings), "labels": list(self.labels),
                "counts_fixed": self.counts_fixed}

    def summary(self) -> str:
        found = "; ".join(self.findings) if self.findings else "no finding"
        return f"grounded ({self.detector}): {found}"


def counts_fixed(case: Case, setting: Setting) -> bool:
    """Counts must not change unless the case moves things between a source and a target
    (transfer, filling, emptying, assembly, quantities)."""
    return "source_target" not in case_scopes(case, setting)


def _track(subject: str, found: Sequence[Detection], sides: Mapping[str, int]) -> Track:
    counts: list[int] = []
    centres: list[tuple[float, float] | None] = []
    for stage in STAGES:
        objects = distinct_objects([d for d in found if d.panel == stage])
        counts.append(len(objects))
        if objects:
            left, top, right, bottom = objects[0].box
            side = sides[stage]
            centres.append(((left + right) / 2 / side, (top + bottom) / 2 / side))
        else:
            centres.append(None)
    first = centres[0]
    shifts = [max(abs(c[0] - first[0]), abs(c[1] - first[1]))
              for c in centres[1:] if c is not None and first is not None]
    return Track(subject, tuple(counts), tuple(centres), max(shifts) if shifts else None)


def build_evidence(case: Case, setting: Setting, subjects: Sequence[str],
                   actions: Sequence[str], detections: Sequence[Detection],
                   sides: Mapping[str, int], detector: str) -> Evidence:
    """Tracks and findings from detections (a detector's or given ones); ``sides`` is each
    panel's longer side in pixels."""
    fixed = counts_fixed(case, setting)
    tracks = tuple(_track(s, [d for d in detections if d.subject == s], sides)
                   for s in dict.fromkeys(subjects))
    findings: list[str] = []
    labels: list[str] = []
    for t in tracks:
        seen = [n for n in t.counts if n]
        if not seen:
            findings.append(f"{t.subject}: found in no panel")
            continue
        missing = [s for s, n in zip(STAGES, t.counts, strict=True) if n == 0]
        if missing:
            findings.append(f"{t.subject}: missing in {', '.join(missing)}")
            if fixed:
                labels.append("grounded_subject_missing")
        more = [s for s, n in zip(STAGES, t.counts, strict=True)
                if t.counts[0] and n > t.counts[0]]
        if more:
            findings.append(f"{t.subject}: {t.counts[0]} in t1, more in {', '.join(more)}")
            if fixed:
                labels.append("grounded_subject_duplicated")
    followed = [t for t in tracks if all(t.counts) and t.shift is not None]
    if followed and all(t.shift is not None and t.shift < DISPLACEMENT_MIN for t in followed):
        findings.append("no subject displaced across panels (largest shift "
                        f"{max(t.shift or 0.0 for t in followed):.3f} of the panel side)")
        if "L2" in case.levels:
            labels.append("grounded_no_displacement")
    return Evidence(detector, tuple(subjects), tuple(actions), tracks, tuple(findings),
                    tuple(dict.fromkeys(labels)), fixed)
