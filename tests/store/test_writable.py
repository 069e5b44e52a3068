"""Whether output paths can be written, asked before any work: each problem named, nothing
created, and a run's outputs checked in order with the option at fault."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.store.writable import (
    UnwritablePath,
    check_file,
    check_folder,
    check_run_outputs,
    file_problem,
    folder_problem,
)

as_root = pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                             reason="root writes everywhere")


def test_existing_and_creatable_folders_are_fine(tmp_path: Path) -> None:
    assert folder_problem(tmp_path) is None
    assert folder_problem(tmp_path / "a" / "b" / "c") is None
    assert not (tmp_path / "a").exists()  # nothing is created


def test_a_file_in_the_way_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert folder_problem(blocker) == f"{blocker} is a file, not a folder"
    assert folder_problem(blocker / "below" / "out") == f"{blocker} is a file, not a folder"
    assert file_problem(blocker / "report.xml") == f"{blocker} is a file, not a folder"
    assert file_problem(tmp_path) == f"{tmp_path} is a folder, not a file"
    assert file_problem(blocker) is None


segments = st.lists(st.text("abcxyz-_", min_size=1, max_size=6), min_size=1, max_size=4)


@given(segments)
def test_any_missing_path_below_a_writable_folder_is_creatable(parts: list[str]) -> None:
    base = Path(os.environ.get("TMPDIR", "/tmp"))
    missing = base.joinpath("imagetime-never-made", *parts)
    assert folder_problem(missing) is None
    assert file_problem(missing) is None


@as_root
def test_read_only_places_are_named(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "kept.xml").write_text("x")
    (locked / "kept.xml").chmod(0o400)
    locked.chmod(0o500)
    try:
        assert folder_problem(locked) == f"the folder {locked} is not writable"
        assert folder_problem(locked / "new") == f"the folder {locked} is not writable"
        assert file_problem(locked / "kept.xml") == f"the file {locked / 'kept.xml'} is not " \
                                                    "writable"
    finally:
        locked.chmod(0o700)


def test_checks_name_the_option_and_the_value(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UnwritablePath) as raised:
        check_folder(blocker, "--imagetime-out")
    assert str(raised.value) == (f"--imagetime-out={blocker}: cannot write there: {blocker} "
                                 "is a file, not a folder")
    with pytest.raises(UnwritablePath, match=r"^--imagetime-junit=.*: cannot write there: .* "
                                             r"is a folder, not a file$"):
        check_file(tmp_path, "--imagetime-junit")
    check_folder(tmp_path / "new", "--imagetime-out")
    check_file(tmp_path / "new.xml", "--imagetime-junit")


def test_run_outputs_are_checked_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    fine = tmp_path / "fine"
    check_run_outputs(fine, fine / "junit.xml", fine / "html", str(fine / "pytest.xml"))
    check_run_outputs(fine, None, None, None)
    cases = [((blocker, None, None, None), "--imagetime-out="),
             ((fine, tmp_path, None, None), "--imagetime-junit="),
             ((fine, None, blocker, None), "--imagetime-html="),
             ((fine, tmp_path, blocker, None), "--imagetime-junit=")]
    for (out, junit, html, _), option in cases:
        with pytest.raises(UnwritablePath, match=f"^{option}"):
            check_run_outputs(out, junit, html, None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnwritablePath) as raised:
        check_run_outputs(fine, None, None, "file/pytest.xml")
    assert str(raised.value).startswith(f"--junitxml={tmp_path / 'file' / 'pytest.xml'}: ")
