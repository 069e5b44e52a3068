"""The benchmark's rubric, written down once: dimensions, tree, applicability, labels, caps.

Every fact here comes from the ImageTime rubric (capability scores C0-C9, diagnostic scores
D0-D14, the progressive capability tree, the null rules and the cap conditions). The paper
gives no cap values; ours are below, and ``RUBRIC_VERSION`` changes whenever any of them do,
so every stored judgment and report says which rules produced its numbers. A rule that only a
new judge's labels can trigger (the evidence caps of ``vlm-instance``) changes no number any
judge could already have stored, so it does not change the version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

RUBRIC_VERSION = "imagetime-rubric/2"

Setting = Literal["prompt-only", "scaffold"]
SETTINGS: tuple[Setting, ...] = ("prompt-only", "scaffold")

C_DIMS: dict[str, str] = {
    "C0": "Layout validity",
    "C1": "Reference grounding",
    "C2": "Entity consistency",
    "C3": "Spatial-view consistency",
    "C4": "Motion continuity",
    "C5": "Temporal ordering",
    "C6": "Causal process consistency",
    "C7": "Interaction consistency",
    "C8": "Constraint/counterfactual sensitivity",
    "C9": "Visual quality",
}
D_DIMS: dict[str, str] = {
    "D0": "Panel parse and crop integrity",
    "D1": "Task-entity binding",
    "D2": "Object permanence and lifecycle",
    "D3": "Background anchor persistence",
    "D4": "Spatial coordinate and relation consistency",
    "D5": "Camera, scale and depth continuity",
    "D6": "Trajectory and pose-position coupling",
    "D7": "Contact, support and affordance geometry",
    "D8": "State-transition visibility",
    "D9": "Phase distinctiveness",
    "D10": "Attention, gaze and intent alignment",
    "D11": "Quantity, set membership and attribute binding",
    "D12": "Occlusion and reappearance consistency",
    "D13": "Constraint execution",
    "D14": "Visual readability for judging",
}
ALL_DIMS: tuple[str, ...] = (*C_DIMS, *D_DIMS)
# What each dimension looks at: every item of the rubric's tables 2 and 3, as the judge reads them.
DIM_FOCUS: dict[str, str] = {
    "C0": "exactly four readable, self-contained panels in the expected 2x2 temporal order",
    "C1": "scaffold settings only: t1 and the subsequent panels preserve the reference's "
          "subject, scene, style, view, layout and state",
    "C2": "subjects, objects, quantities, roles, orientation, materials, reflections, and "
          "target / non-target identities persist",
    "C3": "scene, relative positions, support, scale, camera, depth, lighting, shadows, "
          "reflections and anchors remain coherent",
    "C4": "actors or objects show task-effective displacement with plausible pose, direction, "
          "support and path progression",
    "C5": "panels follow t1 -> t2 -> t3 -> t4 without skipped or premature states",
    "C6": "state changes follow visible preconditions, contact, force, tool use, body mechanics "
          "and conservation",
    "C7": "agents, tools, targets, recipients, garments, gaze, attention and affordances "
          "interact plausibly",
    "C8": "explicit negations, selective operations, blocked actions and counterfactual "
          "conditions are obeyed",
    "C9": "the full sheet is clear, coherent, artifact-free enough, style-matched and "
          "informative for judging",
    "D0": "panels complete, separated, ordered, readable; not stitched, merged, polluted or "
          "cropped",
    "D1": "correct actor, target, recipient, tool, container, obstacle, non-target object and "
          "final object",
    "D2": "objects and actors persist, transform, transfer, hide, appear or disappear only for "
          "task-valid reasons",
    "D3": "stable anchors, surface textures, shadows, reflections, windows, roads, signs and "
          "background objects stay consistent",
    "D4": "left/right, front/back, inside/outside, support, contact, containment, distance and "
          "anchor-relative positions are coherent",
    "D5": "viewpoint, crop, scale, perspective, lighting, shadows, reflections and depth stay "
          "stable unless justified",
    "D6": "pose, position, facing direction, stride phase, support and displacement change "
          "together",
    "D7": "hand-object, tool-target, foot-ground, grip, pouring, insertion, hinge, sleeve, "
          "collar, handle and support geometry is plausible",
    "D8": "important state changes and source/target variables are visibly decomposed, not "
          "only shown as start and end",
    "D9": "t1-t4 are meaningfully different ordered phases: not repeats, early final states or "
          "unrelated snapshots",
    "D10": "gaze, head orientation, pointing, reaching, body facing and attention align with "
           "the active target",
    "D11": "counts, fill levels, source/target volumes, selected objects, groups and "
           "color-object bindings are correct, when applicable",
    "D12": "hidden, inside, behind or reappearing objects stay consistent, when occlusion is "
           "task-relevant",
    "D13": "explicit prohibitions, blocked actions, no-action outcomes, selective operations "
           "and counterfactual conditions hold",
    "D14": "small objects, hands, feet, contact points, faces, tools, openings, reflections and "
           "panel boundaries are clear enough",
}
SCORE_MIN, SCORE_MAX = 0, 10


@dataclass(frozen=True)
class TreeNode:
    """A node of the progressive capability tree: which C and D dimensions it averages."""

    key: str
    name: str
    c_dims: tuple[str, ...]
    d_dims: tuple[str, ...]


# The tree's "Gate: Protocol" node: a mean score, reported apart from L0-L6. Not to be confused
# with the layout gate (GATE_C0_MIN), a pass/fail check on each sheet's C0.
GATE = TreeNode("gate", "Protocol node", ("C0",), ("D0", "D14"))
PROTOCOL_NODE_LABEL = "protocol node (C0, D0, D14)"
LAYOUT_GATE_LABEL = "layout gate (C0 >= 5)"
LEVELS: tuple[TreeNode, ...] = (
    TreeNode("L0", "Static grounding", ("C2", "C3", "C9"), ("D1", "D14")),
    TreeNode("L1", "Identity and anchors", ("C2", "C3"), ("D2", "D3", "D5")),
    TreeNode("L2", "Spatial transition", ("C3", "C4"), ("D4", "D5", "D6", "D8", "D9")),
    TreeNode("L3", "Object-state transition", ("C2", "C6"), ("D2", "D8", "D11", "D12")),
    TreeNode("L4", "Interaction and affordance", ("C4", "C6", "C7"), ("D6", "D7", "D10")),
    TreeNode("L5", "Causal process", ("C5", "C6"), ("D8", "D9", "D11")),
    TreeNode("L6", "Constraint / counterfactual", ("C8",), ("D13",)),
)
LEVEL_KEYS: tuple[str, ...] = tuple(node.key for node in LEVELS)
LEVEL_NAMES: dict[str, str] = {node.key: node.name for node in LEVELS}


@dataclass(frozen=True, slots=True)
class Applicability:
    """Which optional dimensions a case makes applicable (the rubric's null rules), and the
    dimensions the case itself declares not applicable (``not_applicable`` in its file)."""

    constraint: bool
    quantity: bool
    occlusion: bool
    declared: tuple[str, ...] = ()


# Dimensions a case may declare not applicable, and when the declaration is consistent with
# its entities. C1 follows the setting; C8, D13, D11 and D12 follow ``applicable``.
DECLARABLE_NULLS: dict[str, str] = {
    "D10": "gaze and intent need an agent: only a case without actors declares it",
}
# Where ``applicable`` already says it: a declaration of these is refused with this pointer.
FLAG_NULLS: dict[str, str] = {
    "C1": "C1 follows the setting (null in prompt-only)",
    "C8": "set applicable.constraint to false",
    "D13": "set applicable.constraint to false",
    "D11": "set applicable.quantity to false",
    "D12": "set applicable.occlusion to false",
}


def nullable_dims(setting: Setting, applicable: Applicability) -> frozenset[str]:
    """Dimensions that must be null for this case and setting; all others must be scored."""
    dims: set[str] = set(applicable.declared)
    if setting == "prompt-only":
        dims.add("C1")
    if not applicable.constraint:
        dims.update({"C8", "D13"})
    if not applicable.quantity:
        dims.add("D11")
    if not applicable.occlusion:
        dims.add("D12")
    return frozenset(dims)


# The failure modes the paper names, plus the layout failures a parser reports.
FAILURE_LABELS: dict[str, str] = {
    "not_2x2_sheet": "no usable ordered 2x2 sheet (wrong panel count, missing or unreadable "
                     "panels)",
    "panorama_or_collage": "panels form a panorama or collage rather than four complete stages",
    "wrong_action_or_entity": "the requested action, actor, target, tool, recipient, scene or "
                              "style is wrong",
    "identity_drift": "a recurring subject or object changes identity or material",
    "object_duplication": "a recurring object or actor is duplicated",
    "object_disappearance": "a recurring object disappears without task justification",
    "scene_drift": "the scene changes between panels",
    "camera_anchor_drift": "camera or background anchors drift between panels",
    "missing_intermediate_state": "no visible intermediate state",
    "premature_final_state": "the final state appears too early",
    "copied_phases": "two or more panels are copies of each other",
    "no_displacement": "a motion task shows no objective displacement",
    "target_object_jump": "the target object jumps between positions",
    "impossible_contact_geometry": "impossible contact, grip or support geometry",
    "missing_interaction": "the required interaction is not shown",
    "causal_order_violation": "causal order or a causal precondition is violated",
    "non_conservation": "source and target quantities fail to co-vary",
    "constraint_violation": "a blocked or counterfactual condition is violated",
    "occlusion_inconsistency": "occluded objects reappear inconsistently",
    "reference_not_kept": "scaffold setting: the top-left panel does not keep the reference "
                          "image",
}


# Which cases a cap rule applies to (section 4.3 names the scope of some conditions).
CapScope = Literal["always", "constraint", "source_target", "motion", "scaffold"]
CAP_SCOPES: dict[CapScope, str] = {
    "always": "every case",
    "constraint": "cases with an explicit constraint (applicable.constraint)",
    "source_target": "transfer, filling, emptying or assembly tasks: cases with quantity "
                     "binding, an object-state transition (L3, whose focus is source-target "
                     "conservation), a container or a recipient",
    "motion": "motion tasks: cases that probe spatial transition (L2)",
    "scaffold": "the scaffold setting (the top-left panel is the reference)",
}


@dataclass(frozen=True)
class CapRule:
    """A conservative cap: when it fires, each listed dimension is lowered to at most its limit."""

    key: str
    condition: str
    labels: frozenset[str]
    limits: Mapping[str, int]
    only_if: CapScope = "always"


# An item passes the layout gate when its post-cap C0 reaches this value.
GATE_C0_MIN = 5

_TEMPORAL = ("C4", "C5", "C6", "C7")
_PHASE = ("D6", "D7", "D8", "D9", "D10")

CAP_RULES: tuple[CapRule, ...] = (
    CapRule(
        "unusable-sheet",
        "the output is not a usable ordered 2x2 sheet",
        frozenset({"not_2x2_sheet"}),
        {"C0": 0, "D0": 2, **dict.fromkeys(_TEMPORAL, 2), **dict.fromkeys(_PHASE, 2)},
    ),
    CapRule(
        "reference-not-kept",
        "in the scaffold setting, the top-left panel does not keep the reference",
        frozenset({"reference_not_kept"}),
        {"C0": GATE_C0_MIN - 1, "C1": 3},
        only_if="scaffold",
    ),
    CapRule(
        "panorama-or-collage",
        "panels form a panorama or collage rather than four complete stages",
        frozenset({"panorama_or_collage"}),
        {"C0": 3, "D0": 3, "C4": 3, "C5": 3, "D3": 4, "D5": 4, "D9": 3},
    ),
    CapRule(
        "wrong-action-or-entity",
        "the requested action, actor, target, tool, recipient, scene or style is wrong",
        frozenset({"wrong_action_or_entity"}),
        {"C2": 3, "C4": 3, "C6": 3, "C7": 3, "D1": 3},
    ),
    CapRule(
        "identity-not-kept",
        "recurring objects disappear, duplicate or change identity without task justification",
        frozenset({"identity_drift", "object_duplication", "object_disappearance"}),
        {"C2": 4, "D1": 5, "D2": 4},
    ),
    CapRule(
        "copied-phases",
        "phases are copied",
        frozenset({"copied_phases"}),
        {"C0": 4, "C4": 2, "C5": 3, "D6": 3, "D8": 3, "D9": 2},
    ),
    CapRule(
        "no-displacement",
        "a motion task lacks objective displacement",
        frozenset({"no_displacement"}),
        {"C4": 2, "D6": 3, "D8": 4},
        only_if="motion",
    ),
    CapRule(
        "non-conservation",
        "source and target states fail to co-vary in transfer, filling, emptying or assembly",
        frozenset({"non_conservation"}),
        {"C6": 4, "D8": 5, "D11": 3},
        only_if="source_target",
    ),
    CapRule(
        "constraint-violated",
        "a blocked or counterfactual condition is violated",
        frozenset({"constraint_violation"}),
        {"C8": 2, "D13": 2},
        only_if="constraint",
    ),
)

# Labels that objective evidence (subjects grounded per panel by a detector) states; no
# judge's answer may carry them, and their caps are listed apart from the judge's prompt.
EVIDENCE_LABELS: dict[str, str] = {
    "grounded_subject_missing": "a prompt subject found in some panels is missing from another, "
                                "on a case whose counts must not change",
    "grounded_subject_duplicated": "a prompt subject appears more times in a later panel than in "
                                   "t1, on a case whose counts must not change",
    "grounded_no_displacement": "on a motion task, no grounded subject moved across the panels",
}

EVIDENCE_CAP_RULES: tuple[CapRule, ...] = (
    CapRule(
        "grounded-subject-lost",
        "the detector finds a subject missing or duplicated where the case keeps counts",
        frozenset({"grounded_subject_missing", "grounded_subject_duplicated"}),
        {"C2": 4, "D1": 5, "D2": 4},
    ),
    CapRule(
        "grounded-no-displacement",
        "on a motion task, the detector finds no subject displaced",
        frozenset({"grounded_no_displacement"}),
        {"C4": 2, "D6": 3, "D8": 4},
        only_if="motion",
    ),
)
