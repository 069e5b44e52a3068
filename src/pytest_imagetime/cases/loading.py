"""Cases: the Case model, loading YAML case files, and the checks every load applies.

A case file is YAML (format ``cases/1``, schema in ``schemas/cases.schema.json``). Loading
keeps the line of every field, so a problem names the file, the line, the case id and the
field. Benchmark-wide rules (inventory, variants, completeness) live in ``lint``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from sys import intern
from typing import TYPE_CHECKING, Any, Literal

from ..rubric.facts import ALL_DIMS, DECLARABLE_NULLS, FLAG_NULLS, LEVEL_KEYS, Applicability
from . import cache as case_cache
from . import rules as case_rules
from .schemacheck import Check, UnsupportedSchema, compile_check

if TYPE_CHECKING:
    import jsonschema

    from .yaml_lines import Located

CASE_FORMAT = "cases/1"
STAGES: tuple[str, ...] = ("t1", "t2", "t3", "t4")
ENTITY_ROLES: tuple[str, ...] = (
    "actors", "targets", "tools", "containers", "recipients", "obstacles", "non_targets",
)
Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a case file, located as precisely as the file allows."""

    path: str
    message: str
    line: int | None = None
    case_id: str | None = None
    field: str | None = None
    severity: Severity = "error"

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        parts = [where]
        if self.case_id:
            parts.append(f"case {self.case_id!r}")
        if self.field:
            parts.append(f"field {self.field!r}")
        prefix = "warning: " if self.severity == "warning" else ""
        return ": ".join(parts) + f": {prefix}{self.message}"


class CaseFileError(Exception):
    """A case file that cannot be used; carries every problem found, not just the first."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True, slots=True)  # slots: every case holds several
class Setup:
    scene: str
    style: str
    camera: str


@dataclass(frozen=True, slots=True)  # slots: every case holds several
class Predicate:
    id: str
    stage: str  # t1..t4 or "all"
    text: str
    tags: tuple[str, ...] = ()  # e.g. "small-text": deciding it means reading the image

    def as_dict(self) -> dict[str, Any]:
        """The predicate as plain data (for the spec and the judge), tags only where it has
        some."""
        return {"id": self.id, "stage": self.stage, "text": self.text,
                **({"tags": list(self.tags)} if self.tags else {})}


@dataclass(frozen=True, slots=True)  # slots: every case holds several
class Forbidden:
    id: str
    text: str


@dataclass(frozen=True)
class Case:
    """One benchmark case: a generation prompt and the process specification behind it."""

    id: str
    domain: str
    subcategory: str
    concept: str
    difficulty: str
    variant: int
    levels: tuple[str, ...]
    applicable: Applicability
    setup: Setup
    entities: Mapping[str, tuple[str, ...]]
    states: Mapping[str, str]
    predicates: tuple[Predicate, ...]
    temporal_constraints: tuple[str, ...]
    forbidden: tuple[Forbidden, ...]
    prompt: str
    source: str = field(default="", compare=False)
    line: int | None = field(default=None, compare=False)

    def spec(self) -> dict[str, Any]:
        """The case as plain data, without where it was loaded from."""
        data = _flat(self)
        del data["source"], data["line"]
        data["levels"] = list(self.levels)
        data["applicable"] = _flat(self.applicable)
        data["applicable"]["declared"] = list(self.applicable.declared)
        data["setup"] = _flat(self.setup)
        data["entities"] = {k: list(v) for k, v in self.entities.items()}
        data["states"] = dict(self.states)
        data["predicates"] = [p.as_dict() for p in self.predicates]
        data["temporal_constraints"] = list(self.temporal_constraints)
        data["forbidden"] = [_flat(f) for f in self.forbidden]
        return data

    @functools.cached_property
    def spec_hash(self) -> str:
        """Changes whenever anything a judge reads from the case changes."""
        return _sha256(json.dumps(self.spec(), sort_keys=True))

    @property
    def prompt_hash(self) -> str:
        return _sha256(self.prompt)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _flat(value: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict, one level deep (``dataclasses.asdict`` deep-copies
    every value; a case's are immutable)."""
    names = _FIELD_NAMES.get(type(value))
    if names is None:
        names = _FIELD_NAMES[type(value)] = tuple(f.name for f in fields(value))
    return {name: getattr(value, name) for name in names}


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def case_schema() -> dict[str, Any]:
    text = resources.files("pytest_imagetime").joinpath("schemas/cases.schema.json").read_text(
        encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _inline_refs(node: Any, root: dict[str, Any]) -> Any:
    """The schema with its local $refs replaced by what they point to: resolving references
    is most of the validation cost, and the case schema has no recursive ones."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target[part]
            rest = {k: _inline_refs(v, root) for k, v in node.items() if k != "$ref"}
            return {**_inline_refs(target, root), **rest}
        return {k: _inline_refs(v, root) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, root) for v in node]
    return node


@functools.cache
def _inlined_schema() -> dict[str, Any]:
    schema: dict[str, Any] = _inline_refs(case_schema(), case_schema())
    return schema


@functools.cache
def _validator() -> jsonschema.Draft202012Validator:
    # Imported here: a valid file never needs jsonschema (see _fast_check).
    import jsonschema

    return jsonschema.Draft202012Validator(_inlined_schema())


@functools.cache
def _fast_check() -> Check | None:
    """A yes/no schema check many times faster than jsonschema; None if the schema uses
    something it cannot judge exactly. Only a document it rejects goes to jsonschema."""
    try:
        return compile_check(_inlined_schema())
    except UnsupportedSchema:
        return None


def looks_like_case_file(path: Path) -> bool:
    """Cheap test for directory collection: the first meaningful line is the format marker."""
    try:
        with path.open(encoding="utf-8") as fh:
            for raw in fh:
                line = raw.strip()
                if line and not line.startswith("#") and line != "---":
                    return line.startswith("imagetime:")
    except (OSError, UnicodeDecodeError):
        return False
    return False


# ---------------------------------------------------------------- lines of a case file


class _Lines:
    """The line of a data path, as _line_of finds it in _to_data's map. A valid file only
    asks for the line of each case; the full map is built the first time anything else is
    asked, that is when there is a problem to locate."""

    def __init__(self, cases: list[int] | None, root: Callable[[], Any]) -> None:
        self.cases = cases
        self._root = root
        self._map: Located | None = None

    def __call__(self, where: Sequence[str | int]) -> int | None:
        if (self.cases is not None and len(where) == 2 and where[0] == "cases"
                and type(where[1]) is int and 0 <= where[1] < len(self.cases)):
            return self.cases[where[1]]
        if self._map is None:
            self._map = {}
            root = self._root()
            if root is not None:
                from . import yaml_lines as case_yaml

                case_yaml.locate(root, self._map)
        return _line_of(self._map, where)


def _line_of(lines: Located, where: Sequence[str | int]) -> int | None:
    key = tuple(where)
    while key:
        if key in lines:
            return lines[key]
        key = key[:-1]
    return lines.get((), None)


def _field_name(where: Sequence[str | int]) -> str:
    text = ""
    for part in where:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


# ---------------------------------------------------------------- loading


def load_case_file(path: Path, display: str | None = None) -> tuple[Case, ...]:
    """Load and check one case file; raises CaseFileError listing every error found."""
    cases, problems = inspect_case_file(path, display)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise CaseFileError(errors)
    return cases


def inspect_case_file(path: Path,
                      display: str | None = None) -> tuple[tuple[Case, ...], list[Problem]]:
    """The cases of a file and every problem (errors and warnings); never raises.

    When the file has errors that stop cases being built (syntax, schema), no cases come back.
    """
    shown = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return (), [Problem(shown, f"cannot read the file: {exc}")]
    with _gc_paused():
        return _inspect_text(text, shown)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic collector off while a file is parsed. The node tree holds no cycles, but
    its tens of thousands of objects set off collections that walk the whole heap: in a
    pytest process with its plugins imported, these took about as long as the parse itself."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _inspect_text(text: str, shown: str) -> tuple[tuple[Case, ...], list[Problem]]:
    kept = case_cache.load(text)
    if kept is not None:
        try:
            return _from_cache(shown, kept)
        except (TypeError, ValueError):
            pass  # an entry of the right shape holding something else: parsed again
    from . import yaml_lines as case_yaml  # only here: a kept file never imports PyYAML

    try:
        parsed = case_yaml.parse(text)
    except case_yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        return (), [Problem(shown, f"not valid YAML: {exc.problem or exc}", line=line)]
    if parsed is None:
        return (), [Problem(shown, f"empty file; a case file starts with "
                                   f"'imagetime: {CASE_FORMAT}'")]
    data, case_lines, root = parsed
    lines = _Lines(case_lines, lambda: root)
    problems: list[Problem] = []
    check = _fast_check()
    valid = check is not None and isinstance(data, dict) and "imagetime" in data and check(data)
    if not valid:
        problems.extend(_schema_problems(data, shown, lines))
        if problems:
            return (), problems
    try:
        built = [_case_fields(raw, data.get("domain"), shown, lines, i)
                 for i, raw in enumerate(data["cases"])]
    except CaseFileError as exc:
        return (), list(exc.problems)
    cases = tuple(_case_of(fields, shown) for fields in built)
    for i, case in enumerate(cases):
        problems.extend(case_problems(case, shown, lambda f, i=i: lines(("cases", i, *f))))
    problems.extend(duplicate_id_problems(cases))
    if valid:  # jsonschema's messages (on invalid files) depend on its version: not kept
        case_cache.store(text, (built, [
            (p.message, p.line, p.case_id, p.field, p.severity) for p in problems],
            [case.spec_hash for case in cases]))
    return cases, problems


def _from_cache(shown: str, kept: case_cache.Kept) -> tuple[tuple[Case, ...], list[Problem]]:
    """What _inspect_text found in this text before, with ``shown`` as the path: the checks
    are not run again (the cache key covers their code)."""
    built, found, hashes = kept
    cases = tuple(_case_of(fields, shown) for fields in built)
    if len(hashes) == len(cases):
        for case, spec_hash in zip(cases, hashes, strict=True):
            case.__dict__["spec_hash"] = spec_hash  # what the cached property would compute
    return cases, [Problem(shown, message, line, case_id, name,
                           "warning" if severity == "warning" else "error")
                   for message, line, case_id, name, severity in found]


def _schema_problems(data: Any, shown: str,
                     lines: Callable[[Sequence[str | int]], int | None]) -> Iterator[Problem]:
    if not isinstance(data, dict) or "imagetime" not in data:
        yield Problem(shown, f"not a case file: the first key must be 'imagetime: {CASE_FORMAT}'",
                      line=1)
        return
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    for error in errors:
        where = list(error.absolute_path)
        case_id = None
        if len(where) >= 2 and where[0] == "cases" and isinstance(where[1], int):
            raw = data["cases"][where[1]]
            case_id = raw.get("id") if isinstance(raw, dict) else None
            case_id = case_id or f"#{where[1] + 1}"
            field_path = where[2:]
        else:
            field_path = where
        yield Problem(shown, _schema_message(error), line=lines(where),
                      case_id=str(case_id) if case_id else None,
                      field=_field_name(field_path) or None)


def _schema_message(error: jsonschema.ValidationError) -> str:
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        return f"{error.message}; allowed fields: {', '.join(allowed)}"
    if error.validator == "enum":
        options = ", ".join(json.dumps(v) for v in schema.get("enum", []))
        return f"{error.instance!r} is not accepted; use one of {options}"
    if error.validator == "pattern" and schema.get("description"):
        return f"{error.instance!r}: {schema['description']}"
    return error.message


# A case's fields in Case's order, as plain values (the kept form of a case file), less its
# source: id, domain, subcategory, concept, difficulty, variant, levels, applicable (with the
# declared nulls), setup, entities, states, predicates, temporal constraints, forbidden,
# prompt, line.
CaseFields = tuple[str, str, str, str, str, int, tuple[str, ...], dict[str, Any],
                   tuple[str, str, str], dict[str, tuple[str, ...]], dict[str, str],
                   tuple[tuple[str, str, str, tuple[str, ...]], ...], tuple[str, ...],
                   tuple[tuple[str, str], ...],
                   str, int | None]


def _case_fields(raw: dict[str, Any], default_domain: str | None, shown: str,
                 lines: Callable[[Sequence[str | int]], int | None], index: int) -> CaseFields:
    """A schema-valid case's values as the case holds them: defaults filled in, texts
    stripped, the prompt on one line. Kept as they are, so a kept file is built without
    doing this again."""
    domain = raw.get("domain") or default_domain
    if not domain:
        raise CaseFileError([Problem(shown, "no domain: give 'domain' in the case or the file",
                                     line=lines(("cases", index)), case_id=raw["id"],
                                     field="domain")])
    # Names repeated across cases (levels, stages, ids, categories) are interned: one string
    # each instead of one per case (about 1 MB for the packaged cases); marshal keeps them so.
    setup = raw["setup"]
    return (
        raw["id"],
        intern(domain),
        intern(raw["subcategory"]),
        intern(raw["concept"]),
        intern(raw["difficulty"]),
        int(raw["variant"]),
        tuple(sorted(map(intern, raw["levels"]), key=LEVEL_KEYS.index)),
        {**raw["applicable"],
         "declared": tuple(sorted(map(intern, raw.get("not_applicable", ())),
                                  key=ALL_DIMS.index))},
        (setup["scene"], intern(setup["style"]), setup["camera"]),
        {role: tuple(raw["entities"].get(role, ())) for role in ENTITY_ROLES
         if raw["entities"].get(role)},
        {s: raw["states"][s].strip() for s in STAGES},
        tuple((intern(p.get("id") or f"p{i + 1}"), intern(p["stage"]), p["text"].strip(),
               tuple(map(intern, p.get("tags", ()))))
              for i, p in enumerate(raw["predicates"])),
        tuple(raw["temporal_constraints"]),
        tuple((intern(f"f{i + 1}"), t.strip()) for i, t in enumerate(raw["forbidden"])),
        " ".join(raw["prompt"].split()),
        lines(("cases", index)),
    )


def _case_of(fields: CaseFields, shown: str) -> Case:
    (case_id, domain, subcategory, concept, difficulty, variant, levels, applicable, setup,
     entities, states, predicates, temporal_constraints, forbidden, prompt, line) = fields
    return Case(case_id, domain, subcategory, concept, difficulty, variant, levels,
                Applicability(**applicable), Setup(*setup), entities, states,
                tuple([Predicate(*p) for p in predicates]), temporal_constraints,
                tuple([Forbidden(*f) for f in forbidden]), prompt, shown, line)


# ---------------------------------------------------------------- per-case rules

_PANEL_WORDS = (
    ("panel 1", "top left", "top-left"),
    ("panel 2", "top right", "top-right"),
    ("panel 3", "bottom left", "bottom-left"),
    ("panel 4", "bottom right", "bottom-right"),
)
_GRID = re.compile(r"\b(2\s*[x×]\s*2|two[- ]by[- ]two)\b", re.IGNORECASE)
_NEGATION = re.compile(r"\b(not|no|never|only|cannot|can't|without|stays?|remains?|unchanged|"
                       r"blocked|locked|instead)\b", re.IGNORECASE)
_AMOUNT = re.compile(r"\b(\d+|one|two|three|four|five|six|seven|eight|nine|ten|half|third|"
                     r"quarter|full|empty|level|pair|dozen|all|each|both|single|more|less)\b",
                     re.IGNORECASE)
_STOP = frozenset("""a an the of on in at to with and or for from by into onto its his her their
left right top bottom front back side small large big one two three four five six each that this
near next over under""".split())


_WORD = re.compile(r"[a-z]{3,}")  # whole runs of three or more letters


def content_words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _STOP


def _names_word(text: str, word: str) -> bool:
    """Whether ``word`` (letters a-z) is a whole run of letters somewhere in ``text``."""
    start = text.find(word)
    while start != -1:
        end = start + len(word)
        if ((start == 0 or not "a" <= text[start - 1] <= "z")
                and (end == len(text) or not "a" <= text[end] <= "z")):
            return True
        start = text.find(word, start + 1)
    return False


def case_problems(case: Case, shown: str,
                  line_of: Any = lambda field: None) -> Iterator[Problem]:
    """The rules every case must meet, errors and warnings, beyond the schema."""

    def problem(fld: tuple[str | int, ...], message: str,
                severity: Severity = "error") -> Problem:
        return Problem(shown, message, line=line_of(fld), case_id=case.id,
                       field=_field_name(fld), severity=severity)

    stages_covered = {p.stage for p in case.predicates}
    missing = [s for s in STAGES if s not in stages_covered]
    if missing:
        yield problem(("predicates",), f"no predicate for stage {', '.join(missing)}; "
                                       "each of t1, t2, t3, t4 needs at least one")
    seen: set[str] = set()
    for i, p in enumerate(case.predicates):
        if p.id in seen:
            yield problem(("predicates", i, "id"), f"predicate id {p.id!r} is used twice")
        seen.add(p.id)
    for level in ("L0", "L1"):
        if level not in case.levels:
            yield problem(("levels",), f"{level} applies to every case; add it")
    if case.applicable.constraint and "L6" not in case.levels:
        yield problem(("levels",), "applicable.constraint is true, so levels must include L6")
    if "L6" in case.levels and not case.applicable.constraint:
        yield problem(("levels",), "L6 is only for cases with an explicit constraint; "
                                   "set applicable.constraint to true or drop L6")
    prompt = case.prompt.lower()
    if "square" not in prompt:
        yield problem(("prompt",), "the prompt must ask for one square image")
    if not _GRID.search(case.prompt):
        yield problem(("prompt",), "the prompt must name the 2x2 grid layout ('2x2')")
    for number, names in enumerate(_PANEL_WORDS, start=1):
        if not any(name in prompt for name in names):
            yield problem(("prompt",), f"the prompt does not name panel {number} "
                                       f"('{names[0].capitalize()}' or '{names[1]}')")
    texts = [case.states[s].lower() for s in STAGES]
    if len(set(texts)) < len(texts):
        yield problem(("states",), "two or more states are identical; t1..t4 must differ")
    if not (case.entities.get("actors") or case.entities.get("targets")):
        yield problem(("entities",), "name at least one actor or target")
    for role, phrases in case.entities.items():
        for i, phrase in enumerate(phrases):
            words = content_words(phrase)
            # As words & content_words(case.prompt), without splitting every prompt.
            if words and not any(_names_word(prompt, word) for word in words):
                yield problem(("entities", role, i),
                              f"{phrase!r} is not named in the prompt; the judge can only check "
                              "what the prompt states", "warning")
    yield from _declared_null_problems(case, problem)
    if case.applicable.constraint and not _NEGATION.search(case.prompt):
        yield problem(("prompt",), "a constraint case must state what must not happen",
                      "warning")
    if case.applicable.quantity and not _AMOUNT.search(case.prompt):
        yield problem(("prompt",), "a quantity case should name its counts or amounts",
                      "warning")
    for finding in case_rules.findings(case):
        yield problem(finding.field, finding.message, "warning")


def _declared_null_problems(case: Case, problem: Callable[..., Problem]) -> Iterator[Problem]:
    """``not_applicable`` must name only dimensions a case may declare, consistently with its
    entities; a case without actors declares D10 (gaze and intent) or gets a warning."""
    declared = case.applicable.declared
    for dim in declared:
        if dim in FLAG_NULLS:
            yield problem(("not_applicable",), f"{dim} is not declared here: {FLAG_NULLS[dim]}")
        elif dim not in DECLARABLE_NULLS:
            yield problem(("not_applicable",),
                          f"{dim} applies to every case and cannot be declared not applicable; "
                          f"declarable: {', '.join(DECLARABLE_NULLS)}")
    actors = case.entities.get("actors")
    if "D10" in declared and actors:
        yield problem(("not_applicable",), f"D10 is declared not applicable, but the case has "
                                           f"actors ({'; '.join(actors)}): "
                                           f"{DECLARABLE_NULLS['D10']}")
    if not actors and "D10" not in declared:
        yield problem(("not_applicable",), "the case has no actors, so D10 (gaze and intent) "
                                           "does not apply: add 'not_applicable: [D10]'",
                      "warning")


def duplicate_id_problems(cases: Iterable[Case]) -> Iterator[Problem]:
    first: dict[str, Case] = {}
    for case in cases:
        if case.id in first:
            other = first[case.id]
            yield Problem(case.source, f"duplicate case id; first defined at "
                                       f"{other.source}:{other.line}", line=case.line,
                          case_id=case.id, field="id")
        else:
            first[case.id] = case


# ---------------------------------------------------------------- where cases live


def builtin_cases_dir() -> Path:
    """The packaged cases: inside the wheel, or the repository's cases/ in a source checkout."""
    packaged = Path(str(resources.files("pytest_imagetime"))) / "builtin_cases"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[3] / "cases"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"no packaged cases: neither {packaged} nor {checkout} exists")


def case_files(paths: Iterable[Path]) -> list[Path]:
    """Case files under the given files or directories, in a stable order."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(p for p in sorted(path.rglob("*.y*ml"))
                       if p.suffix in (".yaml", ".yml") and looks_like_case_file(p))
        else:
            out.append(path)
    return out
