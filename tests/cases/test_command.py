"""``imagetime cases``: listing the packaged files and copying them out, with clear refusals."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from pytest_imagetime.cases.command import cases_parser
from pytest_imagetime.cases.loading import builtin_cases_dir, case_files, load_case_file


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="imagetime")
    cases_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["cases", *argv])
    code: int = args.func(args)
    return code


def test_list_names_every_packaged_file_with_its_case_count(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("list") == 0
    lines = capsys.readouterr().out.splitlines()
    files = case_files([builtin_cases_dir()])
    assert lines[-1] == f"{len(files)} files in {builtin_cases_dir()}"
    kitchen = next(line for line in lines if line.startswith("kitchen.yaml "))
    count = len(load_case_file(builtin_cases_dir() / "kitchen.yaml"))
    assert kitchen.split() == ["kitchen.yaml", str(count), "cases"]
    assert len(lines) == len(files) + 1


def test_copy_by_stem_or_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "mine" / "cases"
    assert _run("copy", str(target), "kitchen", "pets.yaml", "kitchen") == 0
    assert sorted(p.name for p in target.iterdir()) == ["kitchen.yaml", "pets.yaml"]
    source = builtin_cases_dir() / "kitchen.yaml"
    assert (target / "kitchen.yaml").read_bytes() == source.read_bytes()
    out = capsys.readouterr().out.splitlines()
    cases = len(load_case_file(source)) + len(load_case_file(builtin_cases_dir() / "pets.yaml"))
    assert out[0] == f"copied 2 case file(s), {cases} cases, to {target}"
    assert out[1] == (f"run them: pytest {target} --imagetime-model=MODEL; check edits: "
                      f"imagetime lint {target}")


def test_a_file_named_twice_is_copied_and_counted_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("copy", str(tmp_path), "kitchen", "kitchen.yaml") == 0
    cases = len(load_case_file(builtin_cases_dir() / "kitchen.yaml"))
    assert capsys.readouterr().out.splitlines()[0] == (
        f"copied 1 case file(s), {cases} cases, to {tmp_path}")


def test_an_unknown_name_lists_the_packaged_ones(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("copy", str(tmp_path), "kitchen", "cooking", "zoo") == 2
    err = capsys.readouterr().err
    assert err.startswith("imagetime cases copy: no packaged case file 'cooking', 'zoo'; "
                          "packaged: animation, caregiving,")
    assert not list(tmp_path.iterdir())


def test_existing_files_need_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kitchen.yaml").write_text("mine")
    assert _run("copy", str(tmp_path), "kitchen") == 2
    assert capsys.readouterr().err.strip() == (
        f"imagetime cases copy: 1 file(s) exist already, e.g. {tmp_path / 'kitchen.yaml'}; "
        "--force replaces them")
    assert (tmp_path / "kitchen.yaml").read_text() == "mine"
    assert _run("copy", "--force", str(tmp_path), "kitchen") == 0
    assert (tmp_path / "kitchen.yaml").read_bytes() == (
        builtin_cases_dir() / "kitchen.yaml").read_bytes()


def test_a_file_as_the_target_is_refused(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert _run("copy", str(blocker), "kitchen") == 2
    assert capsys.readouterr().err.strip() == (
        f"imagetime cases copy: {blocker} is a file, not a directory")


def test_a_target_that_cannot_be_made_is_reported(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert _run("copy", str(blocker / "below"), "kitchen") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"imagetime cases copy: cannot write {blocker / 'below'}: ")
