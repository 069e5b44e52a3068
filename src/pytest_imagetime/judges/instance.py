"""Judge ``vlm-instance``: the structured VLM judgment checked against grounded evidence.

The ``vlm`` judge scores the sheet as always; besides, a language model on the same endpoint
parses the prompt into subjects and actions, a detector grounds each subject in each panel
(``grounding``), and the findings are kept with the judgment. Findings the case does not allow
add evidence labels, which cap the VLM's scores where they contradict it (the rubric's
evidence caps); the VLM's own scores and labels are otherwise untouched.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

from ..rubric.judgment import JudgeError, Judgment
from ..sheet.geometry import split
from .ask import Answer, JsonAsker
from .base import CallingJudge, JudgeOptions, PricedCalls, SheetToJudge
from .grounding import (
    DETECTORS,
    PARSE_SCHEMA,
    PARSE_SYSTEM,
    Detector,
    Evidence,
    build_evidence,
    load_detector,
)
from .vlm import VlmJudge

INSTANCE_VERSION = "imagetime-instance/1"


def check_parse(value: Any) -> str | None:
    if not [s for s in value["subject"] if s.strip()]:
        return "no subject parsed from the prompt"
    return None


class InstanceJudge(CallingJudge):
    """Scores what ``vlm`` scores; adds grounded evidence and its labels."""

    def __init__(self, argument: str | None = None, *, options: JudgeOptions | None = None,
                 detector: Detector | None = None) -> None:
        self.options = options or JudgeOptions()
        self.vlm = VlmJudge(options=self.options)
        self._asker = JsonAsker(
            self.options, who="the vlm-instance judge",
            key_hint="--imagetime-judge-key-env=NAME for another variable, 'none' for a server "
                     "without keys; to score offline use --imagetime-judge=pixel")
        self.argument = argument or "owlv2"
        # Loaded at start-up: a missing package or checkpoint stops the run before drawing.
        self._detector = detector
        # One forward pass at a time: judge threads share the model, and it is CPU/GPU-bound.
        self._detecting = threading.Lock()
        if detector is None and self.options.calls:
            self._detector = load_detector(argument)

    @property
    def detector(self) -> Detector:
        if self._detector is None:
            raise JudgeError("the vlm-instance judge was started without a detector")
        return self._detector

    @property
    def name(self) -> str:
        return "vlm-instance"

    @property
    def calls_through(self) -> PricedCalls:
        return self.vlm

    def prompt_template(self) -> str | None:
        return self.vlm.prompt_template()

    @property
    def scored_dims(self) -> frozenset[str]:
        return self.vlm.scored_dims

    def config(self) -> Mapping[str, Any]:
        name, _, model = self.argument.partition("=")
        if self._detector is not None:
            name, model = self._detector.name, self._detector.model_id
        return {**self.vlm.config(), "judge": self.name, "instance_version": INSTANCE_VERSION,
                "detector": name, "detector_model": model or DETECTORS.get(name)}

    def parse(self, prompt: str) -> tuple[tuple[str, ...], tuple[str, ...], Answer]:
        """The prompt's subjects and actions (strict JSON {"subject": [...], "action": [...]})."""
        answer = self._asker.ask([{"role": "system", "content": PARSE_SYSTEM},
                                  {"role": "user", "content": f"Prompt: {prompt}"}],
                                 "imagetime_prompt_analysis", PARSE_SCHEMA, check_parse)
        subjects = tuple(dict.fromkeys(s.strip() for s in answer.value["subject"] if s.strip()))
        actions = tuple(a.strip() for a in answer.value["action"] if a.strip())
        return subjects, actions, answer

    def evidence(self, sheet: SheetToJudge, subjects: tuple[str, ...],
                 actions: tuple[str, ...]) -> Evidence:
        panels = split(sheet.image.convert("RGB"))
        with self._detecting:
            detections = self.detector.detect(panels, subjects)
        sides = {stage: max(p.size) for stage, p in zip(("t1", "t2", "t3", "t4"), panels,
                                                        strict=True)}
        return build_evidence(sheet.case, sheet.setting, subjects, actions, detections, sides,
                              self.detector.name)

    def judge(self, *, sheet: SheetToJudge) -> Judgment:
        judgment = self.vlm.judge(sheet=sheet)
        try:
            subjects, actions, parsed = self.parse(sheet.case.prompt)
        except JudgeError as exc:
            raise JudgeError(f"{self.name}: prompt analysis: {exc}") from None
        found = self.evidence(sheet, subjects, actions)
        cost = (None if judgment.cost_usd is None or self.vlm.price is None
                else judgment.cost_usd + parsed.cost_usd)
        return dataclasses.replace(
            judgment, judge=self.name,
            labels=tuple(dict.fromkeys((*judgment.labels, *found.labels))),
            rationale=f"{judgment.rationale} | {found.summary()}",
            raw={**judgment.raw, "grounding": found.to_json(),
                 "prompt_analysis": parsed.content},
            tokens_in=judgment.tokens_in + parsed.tokens_in,
            tokens_out=judgment.tokens_out + parsed.tokens_out,
            tokens_cached=judgment.tokens_cached + parsed.tokens_cached, cost_usd=cost)
