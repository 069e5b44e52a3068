"""Valid cases and case files built in code, for the tests to break on purpose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pytest_imagetime.cases.model import Case, Forbidden, Predicate, Setup
from pytest_imagetime.rubric.facts import Applicability

PROMPT = (
    "One square image divided into a 2x2 grid of four equal panels separated by thin white "
    "gutters, read left to right, top to bottom, showing four moments of the same scene from "
    "the same fixed side view: a cook in a red apron pours water from a glass jug into an "
    "empty clear glass on a wooden counter beside a green tea towel. Panel 1 (top left): the "
    "cook holds the full jug above the empty glass. Panel 2 (top right): the jug tilts and the "
    "first drops fall. Panel 3 (bottom left): the glass is half full. Panel 4 (bottom right): "
    "the glass is full and the jug is upright. Keep everything identical in every panel."
)


def case_dict(case_id: str = "kitchen-pour-water-1", **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": case_id,
        "subcategory": "Pouring and mixing",
        "concept": "pour water",
        "difficulty": "easy",
        "variant": 1,
        "levels": ["L0", "L1", "L3", "L5"],
        "applicable": {"constraint": False, "quantity": True, "occlusion": False},
        "setup": {"scene": "a wooden kitchen counter", "style": "photorealistic",
                  "camera": "fixed side view"},
        "entities": {"actors": ["a cook in a red apron"], "targets": ["an empty clear glass"],
                     "tools": ["a glass jug"], "non_targets": ["a green tea towel"]},
        "states": {"t1": "The cook holds the full jug above the empty glass.",
                   "t2": "The jug tilts and the first drops fall.",
                   "t3": "The glass is half full.",
                   "t4": "The glass is full and the jug is upright."},
        "predicates": [{"stage": "t1", "text": "the glass is empty"},
                       {"stage": "t2", "text": "the jug is tilted over the glass"},
                       {"stage": "t3", "text": "the glass is about half full"},
                       {"stage": "t4", "text": "the glass is full"},
                       {"stage": "all", "text": "the tea towel stays on the counter"}],
        "temporal_constraints": ["the water level never decreases"],
        "forbidden": ["water in the glass at t1", "a second glass appears"],
        "prompt": PROMPT,
    }
    data.update(overrides)
    return data


def write_case_file(path: Path, cases: list[dict[str, Any]], domain: str = "Kitchen") -> Path:
    path.write_text(yaml.safe_dump({"imagetime": "cases/1", "domain": domain, "cases": cases},
                                   sort_keys=False, width=1000))
    return path


def make_case(case_id: str = "kitchen-pour-water-1", constraint: bool = False,
              quantity: bool = True, occlusion: bool = False) -> Case:
    return Case(
        id=case_id, domain="Kitchen", subcategory="Pouring and mixing", concept="pour water",
        difficulty="easy", variant=1,
        levels=("L0", "L1", "L3", "L5") + (("L6",) if constraint else ()),
        applicable=Applicability(constraint, quantity, occlusion),
        setup=Setup("a wooden kitchen counter", "photorealistic", "fixed side view"),
        entities={"actors": ("a cook in a red apron",), "targets": ("an empty clear glass",),
                  "non_targets": ("a green tea towel",)},
        states={"t1": "empty", "t2": "tilting", "t3": "half full", "t4": "full"},
        predicates=(Predicate("p1", "t1", "the glass is empty"),
                    Predicate("p2", "t2", "the jug is tilted"),
                    Predicate("p3", "t3", "the glass is half full"),
                    Predicate("p4", "t4", "the glass is full")),
        temporal_constraints=("the water level never decreases",),
        forbidden=(Forbidden("f1", "water in the glass at t1"),),
        prompt=PROMPT, source="test.yaml", line=3,
    )
