"""Mistakes found at start-up: output paths that cannot be written, before any item runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_imagetime.cli import main
from pytest_imagetime.writable import file_problem, folder_problem
from tests.builders import case_dict, write_case_file


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")


def _one_case(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [case_dict()])


@pytest.mark.parametrize(("option", "value", "named"), [
    ("--imagetime-out", "afile/out", "afile"),
    ("--imagetime-out", "afile", "afile"),
    ("--imagetime-junit", "afile/j.xml", "afile"),
    ("--imagetime-junit", "adir", "adir"),
    ("--imagetime-html", "afile/site", "afile"),
    ("--junitxml", "afile/pytest.xml", "afile"),
])
def test_an_output_path_that_cannot_be_written_is_refused_before_any_item(
        pytester: pytest.Pytester, option: str, value: str, named: str) -> None:
    _one_case(pytester)
    (pytester.path / "afile").write_text("in the way")
    (pytester.path / "adir").mkdir()
    result = pytester.runpytest_subprocess("kitchen.yaml", "--imagetime-model=procedural",
                                           "--imagetime-size=128", f"{option}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {option}={pytester.path}*{named}*cannot write there*"])
    assert "Traceback" not in result.stderr.str()
    assert "passed" not in result.stdout.str()  # no item ran
    assert not (pytester.path / "reports").exists()


def test_an_unwritable_output_is_refused_under_xdist_too(pytester: pytest.Pytester) -> None:
    _one_case(pytester)
    (pytester.path / "afile").write_text("in the way")
    result = pytester.runpytest_subprocess("kitchen.yaml", "--imagetime-model=procedural",
                                           "--imagetime-out=afile/x", "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --imagetime-out=*afile/x: cannot write there: "
                                 "*afile is a file, not a folder"])


def test_collecting_only_or_a_dry_run_is_not_refused(pytester: pytest.Pytester) -> None:
    _one_case(pytester)
    (pytester.path / "afile").write_text("in the way")
    result = pytester.runpytest("kitchen.yaml", "--imagetime-model=procedural",
                                "--imagetime-out=afile/x", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK


@pytest.mark.parametrize("command", [
    ["report", "RUNS", "-o", "afile/x"],
    ["merge", "RUNS", "-o", "afile/x"],
    ["label", "export", "RUNS", "--sample", "1", "-o", "afile/x"],
    ["label", "import", "RUNS", "-o", "afile/x.csv"],
    ["label", "judge", "RUNS", "-o", "afile/x.csv"],
    ["probe-order", "RUNS", "-o", "afile/x.json"],
    ["baseline", "clipscore", "RUNS", "-o", "afile/x.csv"],
    ["baseline", "caption", "RUNS", "-o", "afile/x.csv"],
])
def test_every_subcommand_refuses_an_unwritable_output_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        command: list[str]) -> None:
    (tmp_path / "afile").write_text("in the way")
    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path)
    args = [str(tmp_path / "runs") if a == "RUNS" else a for a in command]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"imagetime {command[0]}: cannot write --out afile/x")
    assert lines[0].endswith("afile is a file, not a folder")


def test_a_subcommand_that_fails_to_write_says_why_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_imagetime.report import merge as merge_module

    def full_disk(parts: list[Path], out: Path) -> list[Path]:
        raise OSError(28, "No space left on device", str(out / "report.json"))

    monkeypatch.setattr(merge_module, "merge", full_disk)
    assert main(["merge", str(tmp_path), "-o", str(tmp_path / "merged")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"imagetime merge: [Errno 28] No space left on device: "
                   f"'{tmp_path / 'merged' / 'report.json'}'"]


# ------------------------------------------------------------------ the checks themselves

_NAMES = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(existing=_NAMES, blocker=st.integers(min_value=0, max_value=4), asked=_NAMES)
def test_a_path_is_refused_exactly_when_a_file_is_in_its_way(
        tmp_path_factory: pytest.TempPathFactory, existing: list[str], blocker: int,
        asked: list[str]) -> None:
    """Whatever files and folders lie on the way, the check agrees with creating the folder."""
    root = tmp_path_factory.mktemp("tree")
    made = root.joinpath(*existing[:blocker]) if blocker else root
    made.mkdir(parents=True, exist_ok=True)
    if blocker < len(existing):
        made.joinpath(existing[blocker]).write_text("a file")
    target = root.joinpath(*asked)
    problem = folder_problem(target)
    try:
        target.mkdir(parents=True, exist_ok=True)
        creatable = True
    except (FileExistsError, NotADirectoryError):
        creatable = False
    assert (problem is None) == creatable, problem
    if problem is not None:
        assert "is a file, not a folder" in problem


def test_a_file_path_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    assert file_problem(tmp_path) == f"{tmp_path} is a folder, not a file"
    assert file_problem(tmp_path / "new" / "x.xml") is None
    (tmp_path / "x.xml").write_text("")
    assert file_problem(tmp_path / "x.xml") is None


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="permissions bind only a non-root POSIX user")
def test_a_read_only_folder_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        assert folder_problem(locked / "out") == f"the folder {locked} is not writable"
        assert folder_problem(locked) == f"the folder {locked} is not writable"
    finally:
        locked.chmod(0o755)


# ------------------------------------------------------------------ files:DIR without files

def _two_cases(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [
        case_dict("kitchen-pour-water-1"),
        case_dict("kitchen-pour-water-2", variant=2,
                  setup={"scene": "a marble counter", "style": "flat illustration",
                         "camera": "top-down view"})])


def _sheet(path: Path) -> None:
    from PIL import Image

    Image.new("RGB", (64, 64), (200, 180, 160)).save(path)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_files_without_an_image_for_any_selected_case_is_refused_at_start_up(
        pytester: pytest.Pytester, workers: list[str]) -> None:
    _two_cases(pytester)
    sheets = pytester.mkdir("sheets")
    _sheet(sheets / "kitchen-pour-water-one.png")  # a naming scheme of its own
    result = pytester.runpytest_subprocess("kitchen.yaml", "--imagetime-model=files:sheets",
                                           *workers)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: --imagetime-model=files:sheets: none of the 2 selected cases has an image in "
        "sheets (expected <case id>.png, .jpg, .jpeg or .webp, such as "
        "sheets/kitchen-pour-water-1.png); it holds 1 image files, such as "
        "kitchen-pour-water-one.png"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert not (pytester.path / "reports").exists()


def test_files_with_an_image_only_for_a_deselected_case_is_refused(
        pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    sheets = pytester.mkdir("sheets")
    _sheet(sheets / "kitchen-pour-water-1.png")
    result = pytester.runpytest("kitchen.yaml", "--imagetime-model=files:sheets",
                                "-k", "water-2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "none of the 1 selected cases has an image" in result.stderr.str()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_files_with_some_images_runs_and_the_missing_ones_are_item_errors(
        pytester: pytest.Pytester, workers: list[str]) -> None:
    _two_cases(pytester)
    sheets = pytester.mkdir("sheets")
    _sheet(sheets / "kitchen-pour-water-1.png")
    result = pytester.runpytest_subprocess("kitchen.yaml", "--imagetime-model=files:sheets",
                                           "--imagetime-pass-threshold=0", *workers)
    outcomes = result.parseoutcomes()
    assert outcomes.get("errors") == 1
    assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1
