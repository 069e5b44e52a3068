"""Loading case files: reading YAML with the line of every field, building the cases,
running the schema and the per-case checks through the checked-case cache, and finding case
files (the packaged ones, or those under given paths).

A case file is YAML (format ``cases/1``, schema in ``schemas/cases.schema.json``). A problem
names the file, the line, the case id and the field. Benchmark-wide rules (inventory,
variants, completeness) live in ``lint``.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import resources
from pathlib import Path
from sys import intern
from typing import TYPE_CHECKING, Any

from ..rubric.facts import ALL_DIMS, LEVEL_KEYS, Applicability
from . import cache as case_cache
from .checks import case_problems, duplicate_id_problems
from .model import (
    CASE_FORMAT,
    ENTITY_ROLES,
    STAGES,
    Case,
    CaseFileError,
    Forbidden,
    Predicate,
    Problem,
    Setup,
)
from .schema import fast_check, schema_problems

if TYPE_CHECKING:
    from .yaml_lines import Located

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
    its tens of thousands of objects set off collections that walk the whole heap of a
    pytest process with its plugins imported."""
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
    check = fast_check()
    valid = check is not None and isinstance(data, dict) and "imagetime" in data and check(data)
    if not valid:
        problems.extend(schema_problems(data, shown, lines))
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
    # each instead of one per case; marshal keeps them so.
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
