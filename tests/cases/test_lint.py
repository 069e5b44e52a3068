"""`imagetime lint` on the packaged cases and on broken copies of them."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from pytest_imagetime.cases.inventory import inventory
from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.cli import main
from tests.builders import case_dict, write_case_file


def test_packaged_cases_pass_strict_and_complete(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", "--strict", "--complete"]) == 0
    out = capsys.readouterr().out
    assert "0 errors, 0 warnings" in out


def test_packaged_cases_cover_their_domains() -> None:
    from pytest_imagetime.cases.loading import case_files, load_case_file

    cases = [c for f in case_files([builtin_cases_dir()]) for c in load_case_file(f)]
    for domain in {c.domain for c in cases}:
        concepts = {r.concept for r in inventory() if r.domain == domain}
        assert {(c.concept, c.variant) for c in cases if c.domain == domain} == {
            (concept, v) for concept in concepts for v in (1, 2)}


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "cases"
    shutil.copytree(builtin_cases_dir(), target)
    return target


def _edit(path: Path, change: Callable[[dict[str, object]], None]) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=1000))


def _lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["lint", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _first_case(data: dict[str, object]) -> dict[str, object]:
    cases = data["cases"]
    assert isinstance(cases, list)
    first: dict[str, object] = cases[0]
    return first


def test_wrong_concept_suggests_the_inventory_one(copy: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = copy / "kitchen.yaml"
    _edit(path, lambda d: _first_case(d).update(concept="add seasonings to a bowl"))
    code, out = _lint(capsys, str(copy))
    assert code == 1
    assert "field 'concept'" in out and "did you mean 'add seasoning to a bowl'" in out


def test_wrong_difficulty_and_subcategory(copy: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = copy / "kitchen.yaml"
    _edit(path, lambda d: _first_case(d).update(difficulty="hard", subcategory="Cooking"))
    code, out = _lint(capsys, str(path))
    assert code == 1
    assert "differs from the inventory's 'easy'" in out
    assert "differs from the inventory's 'Pouring and mixing'" in out


def test_missing_variant_and_completeness(copy: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = copy / "constraints.yaml"

    def drop_second(data: dict[str, object]) -> None:
        cases = data["cases"]
        assert isinstance(cases, list)
        del cases[1]

    _edit(path, drop_second)
    code, out = _lint(capsys, str(path), "--complete")
    assert code == 1
    assert "has no variant" in out
    assert "inventory concept" in out


def test_copied_variant_is_caught(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy / "kitchen.yaml"

    def copy_variant(data: dict[str, object]) -> None:
        cases = data["cases"]
        assert isinstance(cases, list)
        second = dict(cases[0], id=cases[1]["id"], variant=2)
        cases[1] = second

    _edit(path, copy_variant)
    code, out = _lint(capsys, str(path))
    assert code == 1
    assert "shares 100% of its words" in out
    assert "same scene, style, camera" in out


def test_duplicate_id_across_files(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first_id = yaml.safe_load((copy / "kitchen.yaml").read_text())["cases"][0]["id"]
    write_case_file(copy / "extra.yaml", [case_dict(first_id)])
    code, out = _lint(capsys, str(copy), "--custom")
    assert code == 1
    assert f"case {first_id!r}: field 'id': duplicate case id" in out


def test_custom_concepts_pass_with_custom(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = write_case_file(tmp_path / "mine.yaml", [case_dict(concept="pour lemonade")],
                           domain="Our lab")
    assert _lint(capsys, str(path))[0] == 1
    assert _lint(capsys, str(path), "--custom")[0] == 0


def test_warnings_fail_only_when_strict(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    entities = {**case_dict()["entities"], "non_targets": ["a chrome toaster"]}
    path = write_case_file(tmp_path / "w.yaml", [case_dict(entities=entities)])
    code, out = _lint(capsys, str(path), "--custom")
    assert code == 0 and "warning: 'a chrome toaster' is not named in the prompt" in out
    assert _lint(capsys, str(path), "--custom", "--strict")[0] == 1


def test_missing_path_and_no_case_files(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _lint(capsys, str(tmp_path / "nope"))
    assert code == 2 and "no such file or directory" in out
    code, out = _lint(capsys, str(tmp_path))
    assert code == 2 and "no case files" in out
