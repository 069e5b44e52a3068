from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cases.loading import (
    builtin_cases_dir,
    case_files,
    load_case_file,
    looks_like_case_file,
)
from pytest_imagetime.cases.model import CaseFileError
from tests.builders import case_dict, write_case_file


def test_valid_file_loads_with_ids_lines_and_defaults(tmp_path: Path) -> None:
    path = write_case_file(tmp_path / "k.yaml", [case_dict()])
    (case,) = load_case_file(path)
    assert case.domain == "Kitchen"
    assert [p.id for p in case.predicates] == ["p1", "p2", "p3", "p4", "p5"]
    assert [f.id for f in case.forbidden] == ["f1", "f2"]
    assert case.line == 4
    assert case.levels == ("L0", "L1", "L3", "L5")
    assert len(case.spec_hash) == 64


def test_spec_hash_follows_content(tmp_path: Path) -> None:
    a = load_case_file(write_case_file(tmp_path / "a.yaml", [case_dict()]))[0]
    b = load_case_file(write_case_file(tmp_path / "b.yaml", [case_dict()]))[0]
    changed = case_dict(states={**case_dict()["states"], "t3": "The glass is a third full."})
    c = load_case_file(write_case_file(tmp_path / "c.yaml", [changed]))[0]
    assert a.spec_hash == b.spec_hash != c.spec_hash


def test_spec_is_the_case_as_plain_data_without_its_location() -> None:
    # Stored runs are matched to their cases by this hash: its input must not drift.
    for path in case_files([builtin_cases_dir()]):
        for case in load_case_file(path):
            full = dataclasses.asdict(case)
            del full["source"], full["line"]
            for predicate in full["predicates"]:  # untagged predicates hash as before tags
                if not predicate["tags"]:
                    del predicate["tags"]
            assert json.dumps(case.spec(), sort_keys=True) == json.dumps(full, sort_keys=True)


def _problems(tmp_path: Path, *cases: dict[str, object]) -> str:
    path = write_case_file(tmp_path / "bad.yaml", list(cases))
    with pytest.raises(CaseFileError) as info:
        load_case_file(path)
    return str(info.value)


def test_unknown_field_names_case_field_line_and_allowed(tmp_path: Path) -> None:
    text = _problems(tmp_path, case_dict(), case_dict("kitchen-pour-water-2", variant=2,
                                                       promt="typo"))
    assert "bad.yaml:" in text
    assert "case 'kitchen-pour-water-2'" in text
    assert "'promt'" in text and "allowed fields:" in text


def test_bad_enum_lists_accepted_values(tmp_path: Path) -> None:
    text = _problems(tmp_path, case_dict(difficulty="trivial"))
    assert "field 'difficulty'" in text
    assert '"easy", "medium", "hard"' in text


def test_bad_stage_is_located(tmp_path: Path) -> None:
    preds = case_dict()["predicates"] + [{"stage": "t5", "text": "nothing"}]
    text = _problems(tmp_path, case_dict(predicates=preds))
    assert "field 'predicates[5].stage'" in text
    assert "'t5' is not accepted" in text


def test_missing_stage_predicate(tmp_path: Path) -> None:
    preds = [p for p in case_dict()["predicates"] if p["stage"] != "t3"]
    text = _problems(tmp_path, case_dict(predicates=preds))
    assert "no predicate for stage t3" in text


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"levels": ["L1", "L3"]}, "L0 applies to every case"),
        ({"levels": ["L0", "L1", "L6"]}, "L6 is only for cases with an explicit constraint"),
        ({"applicable": {"constraint": True, "quantity": False, "occlusion": False}},
         "must include L6"),
        ({"prompt": "A picture of four moments of a cook pouring water into a glass, "
                    "showing it in many views and panels for the judge to see clearly."},
         "must ask for one square image"),
        ({"states": {"t1": "same", "t2": "same", "t3": "x is", "t4": "y is"}}, "identical"),
        ({"entities": {"non_targets": ["a green tea towel"]}}, "at least one actor or target"),
        ({"id": "Kitchen_Pour"}, "lower-case words joined by hyphens"),
    ],
)
def test_rules(tmp_path: Path, overrides: dict[str, Any], message: str) -> None:
    assert message in _problems(tmp_path, case_dict(**overrides))


def test_prompt_must_name_every_panel(tmp_path: Path) -> None:
    prompt = case_dict()["prompt"].replace("Panel 3 (bottom left)", "Next")
    assert "does not name panel 3" in _problems(tmp_path, case_dict(prompt=prompt))


def test_duplicate_ids_in_one_file(tmp_path: Path) -> None:
    text = _problems(tmp_path, case_dict(), case_dict(variant=2))
    assert "duplicate case id; first defined at" in text


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("imagetime: cases/1\ncases:\n  - id: [unclosed\n")
    with pytest.raises(CaseFileError, match=r"broken.yaml:\d+: not valid YAML"):
        load_case_file(path)


def test_not_a_case_file(tmp_path: Path) -> None:
    path = tmp_path / "other.yaml"
    path.write_text("name: ci\non: push\n")
    with pytest.raises(CaseFileError, match="not a case file"):
        load_case_file(path)
    assert not looks_like_case_file(path)


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("# nothing\n")
    with pytest.raises(CaseFileError, match="empty file"):
        load_case_file(path)


def test_case_files_finds_only_marked_yaml(tmp_path: Path) -> None:
    write_case_file(tmp_path / "a.yaml", [case_dict()])
    (tmp_path / "sub").mkdir()
    write_case_file(tmp_path / "sub" / "b.yml", [case_dict("kitchen-pour-water-2")])
    (tmp_path / "ci.yaml").write_text("on: push\n")
    found = [p.name for p in case_files([tmp_path])]
    assert found == ["a.yaml", "b.yml"]


def test_builtin_cases_load() -> None:
    files = case_files([builtin_cases_dir()])
    assert files
    cases = [c for f in files for c in load_case_file(f)]
    assert len({c.id for c in cases}) == len(cases)
