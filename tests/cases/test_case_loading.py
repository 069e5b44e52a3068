"""The fast path of case loading agrees with the slow one it stands in for.

A valid file is parsed without a line map and checked by ``schemacheck`` instead of
jsonschema; these tests hold the shortcuts to what they replace: the fast check never
accepts what jsonschema rejects, the plain data and the lazily found lines are those of
``_to_data``'s map, and problems found on the fast path are located as before.
"""

from __future__ import annotations

import copy
import datetime
import gc
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_imagetime.cases import checks as case_checks
from pytest_imagetime.cases import loading as case_loading
from pytest_imagetime.cases import schema as case_schema
from pytest_imagetime.cases import yaml_lines as case_yaml
from pytest_imagetime.cases.checks import content_words
from pytest_imagetime.cases.loading import (
    builtin_cases_dir,
    case_files,
    inspect_case_file,
    load_case_file,
)
from pytest_imagetime.cases.model import CaseFileError
from pytest_imagetime.cases.schemacheck import UnsupportedSchema, compile_check
from tests.builders import case_dict

Doc = dict[str, Any]


def _doc(*items: Doc) -> Doc:
    return {"imagetime": "cases/1", "domain": "Kitchen",
            "cases": list(items) or [case_dict(), case_dict("kitchen-pour-water-2", variant=2)]}


def _jsonschema_valid(doc: Any) -> bool:
    return not any(case_schema.validator().iter_errors(doc))


def _fast_valid(doc: Any) -> bool:
    check = case_schema.fast_check()
    assert check is not None, "the case schema should compile to a fast check"
    return check(doc)


def _paths(node: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [where]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*where, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*where, i))
    return out


def _at(node: Any, where: tuple[Any, ...]) -> Any:
    for part in where:
        node = node[part]
    return node


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 2.0, 0.5]),
    st.text(alphabet="aLb0-_ \n", max_size=6),
    st.sampled_from(["easy", "hard", "t1", "all", "L0", "L6", "p1", "p01", "cases/1",
                     "kitchen-pour-water-1", "Kitchen_Pour", "abc\n", "x" * 100, "x" * 97]),
    st.dates(min_value=datetime.date(2000, 1, 1), max_value=datetime.date(2000, 1, 2)),
)
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "id", "text"]), inner,
                                                 max_size=2)), max_leaves=4)


@st.composite
def mutated_docs(draw: st.DrawFn) -> Doc:
    doc = _doc()
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from([w for w in _paths(doc) if w]))
        parent, key = _at(doc, where[:-1]), where[-1]
        action = draw(st.sampled_from(["replace", "delete", "add", "copy"]))
        if action == "replace":
            parent[key] = draw(values)
        elif action == "delete":
            del parent[key]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "id", "domain", "levels"]))] = draw(values)
        elif action == "copy" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[key]))
    return doc


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_docs())
def test_fast_check_never_accepts_what_jsonschema_rejects(doc: Doc) -> None:
    if _fast_valid(doc):
        assert _jsonschema_valid(doc)


@pytest.mark.parametrize(
    ("change", "valid"),
    [
        ({}, True),
        ({"variant": True}, False),  # jsonschema's enum tells booleans from 1 and 2
        ({"variant": "1"}, False),
        ({"variant": 1.0}, None),  # valid to jsonschema; left to it
        ({"levels": ["L0", "L1", "L1"]}, False),
        ({"levels": ["L0", "L1", 1]}, False),
        ({"id": "abc\n"}, True),  # re.search: '$' matches before a final newline
        ({"id": "a" * 97}, False),
        ({"id": "Abc"}, False),
        ({"prompt": "too short"}, False),
        ({"setup": {"scene": "ab", "style": "abc", "camera": "abc"}}, False),
        ({"setup": {"scene": "abc", "style": "abc", "camera": "abc", "extra": 1}}, False),
        ({"entities": {"non_targets": []}}, False),
        ({"entities": {"non_targets": ["abc"], "actors": []}}, True),
        ({"applicable": {"constraint": 0, "quantity": False, "occlusion": False}}, False),
        ({"predicates": [{"stage": "t1", "text": "abc", "id": "p7"}] * 4}, True),
        ({"predicates": [{"stage": "t1", "text": "abc", "id": "q7"}] * 4}, False),
        ({"concept": datetime.date(2020, 1, 1)}, False),
        ({"concept": ""}, False),
        ({"domain": None}, False),
    ],
)
def test_fast_check_table(change: Doc, valid: bool | None) -> None:
    doc = _doc(case_dict(**change))
    expected = _jsonschema_valid(doc)
    if valid is not None:
        assert expected is valid
        assert _fast_valid(doc) is valid
    else:  # not sure: the fast check says no and jsonschema decides
        assert expected and not _fast_valid(doc)


@pytest.mark.parametrize("doc", [
    {"cases": []}, {"imagetime": "cases/2", "cases": [case_dict()]}, {"imagetime": "cases/1"},
    {"imagetime": "cases/1", "cases": [case_dict()], "extra": 1}, [], "text", None,
])
def test_fast_check_file_level(doc: Any) -> None:
    assert not _fast_valid(doc)
    assert not _jsonschema_valid(doc)


def test_fast_check_accepts_the_packaged_cases() -> None:
    for path in case_files([builtin_cases_dir()]):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert _fast_valid(doc), path


def _schemas(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    """Small schemas of the keywords compile_check knows, for the generic paths."""
    leaf: dict[str, st.SearchStrategy[Any]] = {
        "type": st.sampled_from(["string", "integer", "number", "boolean", "null", "object",
                                 "array", ["string", "null"], ["integer", "array"]]),
        "const": scalars, "enum": st.lists(scalars, min_size=1, max_size=3),
        "minLength": st.integers(0, 4), "maxLength": st.integers(0, 4),
        "pattern": st.sampled_from(["^a", "b$", "^[a-z]+$", "0"]),
        "minItems": st.integers(0, 2), "maxItems": st.integers(0, 2),
        "uniqueItems": st.booleans(), "required": st.lists(st.sampled_from(["a", "id"])),
        "additionalProperties": st.booleans(),
    }
    if depth:
        sub = _schemas(depth - 1)
        leaf["items"] = st.one_of(st.booleans(), sub)
        leaf["properties"] = st.dictionaries(st.sampled_from(["a", "id", "text"]),
                                             st.one_of(st.booleans(), sub), max_size=2)
        leaf["additionalProperties"] = st.one_of(st.booleans(), sub)
    return st.fixed_dictionaries({}, optional=leaf)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_schemas(2), st.lists(values, min_size=1, max_size=4))
def test_compiled_schemas_never_accept_what_jsonschema_rejects(schema: dict[str, Any],
                                                                instances: list[Any]) -> None:
    check = compile_check(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for instance in instances:
        if check(instance):
            assert validator.is_valid(instance), instance


def test_unknown_keywords_are_not_compiled() -> None:
    with pytest.raises(UnsupportedSchema):
        compile_check({"type": "string", "format": "date"})
    with pytest.raises(UnsupportedSchema):
        compile_check({"type": "object", "patternProperties": {"^x": {}},
                       "additionalProperties": False})
    check = compile_check({"enum": [1, None, "a"], "description": "annotation only"})
    assert [check(v) for v in (1, None, "a", True, 1.0, "b")] == [
        True, True, True, False, False, False]
    assert compile_check(False)(1) is False and compile_check(True)(1) is True


# ---------------------------------------------------------------- plain data and lines

TRICKY_YAML = [
    "a: 1\na: {b: 2, c: 3}\na: {b: 4}\n",  # duplicate keys: the last wins, stale lines stay
    "x: &x\n  - 1\n  - {k: v}\ny: *x\nz: [*x, *x]\n",  # aliases share nodes
    "? [a, b]\n: 1\n1: one\nnull: none\ntrue: yes\n2020-01-02: date\n",  # keys made strings
    "s: !!str 12\nb: !!binary aGVsbG8=\nf: .5\nt: 12:30\nn: ~\nq: 'quoted'\n",
    "cases:\n  - a\n  - b\ncases:\n  - c\n",
    "cases: x\n",
    "- 1\n- [2, 3]\n",
    "just text\n",
]


def _compose(text: str) -> yaml.Node:
    node = yaml.compose(text, Loader=case_yaml._Loader)
    assert node is not None
    return node


def _all_paths(lines: dict[tuple[str | int, ...], int]) -> list[tuple[str | int, ...]]:
    paths = list(lines)
    # Paths that are not in the map, found by the longest prefix that is.
    paths += [(*p, "missing") for p in lines] + [(*p, 99) for p in lines] + [("cases", -1)]
    return paths


def _both_ways(text: str) -> tuple[Any, dict[tuple[str | int, ...], int],
                                  list[case_loading._Lines]]:
    """The reference parse (data with every line) and the fast one (plain data, lines looked
    up lazily from the parse's nodes); their data must be equal."""
    lines: dict[tuple[str | int, ...], int] = {}
    data = case_yaml._to_data(_compose(text), (), lines, yaml.constructor.SafeConstructor())
    parsed = case_yaml.parse(text)
    assert parsed is not None
    plain, case_lines, root = parsed
    assert plain == data
    return data, lines, [case_loading._Lines(case_lines, lambda: root)]


@pytest.mark.parametrize("text", TRICKY_YAML)
def test_plain_data_and_lines_match_the_line_map(text: str) -> None:
    _, lines, fast = _both_ways(text)
    for lazy in fast:
        for where in _all_paths(lines):
            assert lazy(where) == case_loading._line_of(lines, where), where


def test_plain_data_and_case_lines_of_the_packaged_cases() -> None:
    for path in case_files([builtin_cases_dir()])[:3]:
        text = path.read_text(encoding="utf-8")
        data, lines, fast = _both_ways(text)
        for lazy in fast:
            for where in lines:
                if len(where) == 2:
                    assert lazy(where) == lines[where]
            assert lazy._map is None  # the case lines alone never build the map
        assert [c.line for c in load_case_file(path)] == [
            lines["cases", i] for i in range(len(data["cases"]))]


@settings(max_examples=150, deadline=None)
@given(values)
def test_plain_data_matches_on_generated_yaml(value: Any) -> None:
    text = yaml.safe_dump({"v": value, "w": [value]})
    _, lines, fast = _both_ways(text)
    for lazy in fast:
        for where in _all_paths(lines):
            assert lazy(where) == case_loading._line_of(lines, where)


# ---------------------------------------------------------------- problems on the fast path


def test_warning_on_a_valid_file_names_the_entity_line(tmp_path: Path) -> None:
    item = case_dict(entities={"actors": ["a cook in a red apron"],
                               "targets": ["a purple unicorn"],
                               "non_targets": ["a green tea towel"]})
    path = tmp_path / "w.yaml"
    path.write_text(yaml.safe_dump(_doc(item), sort_keys=False, width=1000))
    found, problems = inspect_case_file(path, "w.yaml")
    assert len(found) == 1
    (problem,) = problems
    expected = path.read_text().splitlines().index("    - a purple unicorn") + 1
    assert problem.severity == "warning"
    assert str(problem) == (f"w.yaml:{expected}: case 'kitchen-pour-water-1': field "
                            "'entities.targets[0]': warning: 'a purple unicorn' is not named "
                            "in the prompt; the judge can only check what the prompt states")


def test_rule_error_on_a_schema_valid_file_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(_doc(case_dict(levels=["L1", "L3"])), sort_keys=False,
                                   width=1000))
    with pytest.raises(CaseFileError) as info:
        load_case_file(path)
    # A block sequence starts at its first item, the line _to_data's map has always named.
    expected = path.read_text().splitlines().index("  - L1") + 1
    assert str(info.value) == (f"{path}:{expected}: case 'kitchen-pour-water-1': field "
                               "'levels': L0 applies to every case; add it")


def test_a_file_only_jsonschema_accepts_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(yaml.safe_dump(_doc(case_dict(variant=1.0)), sort_keys=False, width=1000))
    (case,) = load_case_file(path)
    assert case.variant == 1


def test_without_the_fast_check_results_are_the_same(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(_doc(), sort_keys=False, width=1000))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_doc(case_dict(difficulty="trivial", promt="x")),
                                  sort_keys=False, width=1000))
    fast = [inspect_case_file(good), inspect_case_file(bad)]
    monkeypatch.setattr(case_loading, "fast_check", lambda: None)
    assert [inspect_case_file(good), inspect_case_file(bad)] == fast
    assert fast[0][0] and not fast[0][1] and not fast[1][0] and len(fast[1][1]) == 2


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab -,.Zé\n", max_size=40), st.text(alphabet="ab -Z", max_size=12))
def test_names_word_is_membership_in_content_words(text: str, phrase: str) -> None:
    lowered = text.lower()
    for word in content_words(phrase):
        assert case_checks._names_word(lowered, word) == (word in content_words(text))


def test_collector_is_back_on_after_loading(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(_doc(), sort_keys=False))
    bad = tmp_path / "bad.yaml"
    bad.write_text("imagetime: cases/1\ncases: [\n")
    assert gc.isenabled()
    load_case_file(good)
    with pytest.raises(CaseFileError):
        load_case_file(bad)
    assert gc.isenabled()
    gc.disable()
    try:
        load_case_file(good)
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()
