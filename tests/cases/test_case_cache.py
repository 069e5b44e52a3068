"""The cache of checked case files: the same cases and problems with or without it, never
stale, and never in the way when it cannot be used."""

from __future__ import annotations

import hashlib
import json
import marshal
import sys
from pathlib import Path
from typing import Any

import pytest

import pytest_imagetime.cases
from pytest_imagetime.cases import cache as case_cache
from pytest_imagetime.cases.loading import builtin_cases_dir, inspect_case_file, load_case_file
from tests.builders import case_dict, write_case_file


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("IMAGETIME_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "cases"


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"*{case_cache.SUFFIX}")) if folder.exists() else []


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts PyYAML is asked to parse from now on: a text found in the cache is not."""
    from pytest_imagetime.cases import yaml_lines

    parsed: list[str] = []
    real = yaml_lines.parse

    def counting(text: str) -> Any:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(yaml_lines, "parse", counting)
    return parsed


def test_packaged_cases_are_the_same_cold_and_warm(cache: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(builtin_cases_dir().glob("*.yaml"))[:4]
    parsed = _count_parses(monkeypatch)
    cold = [inspect_case_file(f) for f in files]
    assert len(_entries(cache)) == len(files)
    assert len(parsed) == len(files)
    warm = [inspect_case_file(f) for f in files]
    assert len(parsed) == len(files)  # the warm pass read every file from the cache
    assert warm == cold
    assert ([case.line for found, _ in warm for case in found]
            == [case.line for found, _ in cold for case in found])


def test_kept_spec_hashes_are_the_ones_the_cases_hash_to(cache: Path) -> None:
    path = sorted(builtin_cases_dir().glob("*.yaml"))[0]
    cold = load_case_file(path)
    warm = load_case_file(path)
    assert all("spec_hash" in case.__dict__ for case in warm)  # kept, not computed
    for kept, fresh in zip(warm, cold, strict=True):
        computed = hashlib.sha256(json.dumps(fresh.spec(), sort_keys=True).encode()).hexdigest()
        assert kept.spec_hash == fresh.spec_hash == computed


def test_an_entry_of_another_shape_is_parsed_again(tmp_path: Path, cache: Path) -> None:
    path = write_case_file(tmp_path / "one.yaml", [case_dict()])
    expected = load_case_file(path)
    entry = _entries(cache)[0]
    shapes: list[tuple[Any, ...]] = [({"cases": []}, None, []), ({"cases": []}, None, [], []),
                                     ({}, [], []), ([("too", "short")], [], [])]
    for shape in shapes:
        entry.write_bytes(marshal.dumps(shape))  # earlier formats' shapes, and wrong ones
        assert load_case_file(path) == expected
        assert [type(part) for part in marshal.loads(entry.read_bytes())] == [list] * 3


def test_problems_are_kept_with_their_lines_and_path(tmp_path: Path, cache: Path) -> None:
    bad = case_dict("kitchen-pour-water-2", variant=2)
    bad["states"]["t2"] = bad["states"]["t1"]
    path = write_case_file(tmp_path / "bad.yaml", [case_dict(), bad])
    cold = inspect_case_file(path)
    assert {p.severity for p in cold[1]} == {"error"}
    assert all(p.line and p.case_id == "kitchen-pour-water-2" for p in cold[1])
    assert len(_entries(cache)) == 1
    assert inspect_case_file(path) == cold
    (tmp_path / "moved").mkdir()
    moved = (tmp_path / "moved" / "bad.yaml")
    moved.write_text(path.read_text())
    found = inspect_case_file(moved, display="shown/bad.yaml")
    assert [p.path for p in found[1]] == ["shown/bad.yaml"] * len(cold[1])
    assert [c.source for c in found[0]] == ["shown/bad.yaml"] * 2


def test_files_the_schema_rejects_are_not_kept(tmp_path: Path, cache: Path) -> None:
    path = write_case_file(tmp_path / "bad.yaml", [case_dict(difficulty="impossible")])
    first = inspect_case_file(path)
    assert first[0] == () and first[1][0].field == "difficulty"
    assert not _entries(cache)
    assert inspect_case_file(path) == first


def test_new_checks_do_not_use_what_old_ones_kept(tmp_path: Path, cache: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_case_file(tmp_path / "k.yaml", [case_dict()])
    load_case_file(path)
    monkeypatch.setattr(case_cache, "_code_digest", lambda: "checks of another version")
    assert case_cache.load(path.read_text()) is None
    load_case_file(path)
    assert len(_entries(cache)) == 2


def test_an_edited_file_is_parsed_again(tmp_path: Path, cache: Path) -> None:
    path = write_case_file(tmp_path / "k.yaml", [case_dict()])
    assert load_case_file(path)[0].concept == "pour water"
    write_case_file(path, [case_dict(concept="pour milk")])
    assert load_case_file(path)[0].concept == "pour milk"
    assert len(_entries(cache)) == 2


def test_a_damaged_entry_is_parsed_again_and_rewritten(tmp_path: Path, cache: Path) -> None:
    path = write_case_file(tmp_path / "k.yaml", [case_dict()])
    expected = load_case_file(path)
    (entry,) = _entries(cache)
    for damage in (b"", b"\x00garbage", entry.read_bytes()[:10]):
        entry.write_bytes(damage)
        assert load_case_file(path) == expected
        assert entry.read_bytes() not in (b"", b"\x00garbage")


def test_a_cache_that_cannot_be_written_is_not_used(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("IMAGETIME_CACHE_DIR", str(blocker))
    path = write_case_file(tmp_path / "k.yaml", [case_dict()])
    parsed = _count_parses(monkeypatch)
    first = load_case_file(path)
    assert [case.id for case in first] == ["kitchen-pour-water-1"]
    assert load_case_file(path) == first
    assert parsed == [path.read_text()] * 2  # nothing was kept: both loads parsed the file
    assert case_cache.load(path.read_text()) is None
    assert blocker.read_text() == "not a directory"


@pytest.mark.parametrize("setting", ["off", "", "None"])
def test_the_cache_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     setting: str) -> None:
    monkeypatch.setenv("IMAGETIME_CACHE_DIR", setting)
    assert case_cache.cache_dir() is None
    path = write_case_file(tmp_path / "k.yaml", [case_dict()])
    assert load_case_file(path)
    assert not list(tmp_path.rglob(f"*{case_cache.SUFFIX}"))


def test_code_that_cannot_be_read_keeps_nothing(tmp_path: Path, cache: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(case_cache, "_code_digest", lambda: None)
    path = write_case_file(tmp_path / "k.yaml", [case_dict()])
    parsed = _count_parses(monkeypatch)
    first = load_case_file(path)
    assert [case.id for case in first] == ["kitchen-pour-water-1"]
    assert load_case_file(path) == first
    assert parsed == [path.read_text()] * 2  # nothing was kept: both loads parsed the file
    assert not _entries(cache)


def test_the_default_folder_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IMAGETIME_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert case_cache.cache_dir() == tmp_path / "xdg" / "pytest-imagetime" / "cases"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert case_cache.cache_dir() == tmp_path / "home" / ".cache" / "pytest-imagetime" / "cases"


def test_old_entries_are_pruned(tmp_path: Path, cache: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(case_cache, "MAX_ENTRIES", 3)
    for n in range(5):
        case_cache.store(f"text {n}", ([{"n": n}], [], []))
    assert len(_entries(cache)) == 3
    assert case_cache.load("text 4") == ([{"n": 4}], [], [])


def test_values_marshal_cannot_keep_are_not_kept(cache: Path) -> None:
    import datetime

    case_cache.store("dated", ([{"when": datetime.date(2026, 1, 1)}], [], []))
    assert case_cache.load("dated") is None
    assert not _entries(cache)


def test_a_kept_file_is_built_without_pyyaml(tmp_path: Path, cache: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    kept = write_case_file(tmp_path / "kept.yaml", [case_dict()])
    expected = load_case_file(kept)
    monkeypatch.setitem(sys.modules, "yaml", None)  # any import of it now fails
    monkeypatch.delitem(sys.modules, "pytest_imagetime.cases.yaml_lines", raising=False)
    monkeypatch.delattr(pytest_imagetime.cases, "yaml_lines", raising=False)
    assert load_case_file(kept) == expected
    new = write_case_file(tmp_path / "new.yaml", [case_dict("kitchen-pour-water-2", variant=2)])
    with pytest.raises(ImportError):  # the guard above is real: a new text needs the parser
        load_case_file(new)


def test_another_pyyaml_parses_again(tmp_path: Path, cache: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    installed = case_cache._installed_yaml()
    assert installed is not None and installed.startswith(str(yaml.__file__))
    path = write_case_file(tmp_path / "one.yaml", [case_dict()])
    load_case_file(path)
    monkeypatch.setattr(case_cache, "_installed_yaml", lambda: f"{installed}:upgraded")
    case_cache._code_digest.cache_clear()
    try:
        load_case_file(path)
        assert len(_entries(cache)) == 2  # not found under the old key: parsed and kept anew
    finally:
        case_cache._code_digest.cache_clear()
