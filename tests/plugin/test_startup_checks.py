"""Mistakes found at start-up: output paths that cannot be written, before any item runs."""

from __future__ import annotations

import fnmatch
import importlib
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_imagetime.cli import main
from pytest_imagetime.store.writable import file_problem, folder_problem
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
    # The module itself: the package's ``merge`` attribute may be the function of that name.
    merge_module = importlib.import_module("pytest_imagetime.report.merge")

    def full_disk(parts: list[Path], out: Path, **_: object) -> list[Path]:
        raise OSError(28, "No space left on device", str(out / "report.json"))

    monkeypatch.setattr(merge_module, "merge", full_disk)
    # The merge runner holds the function too, if it was imported before this test.
    monkeypatch.setattr(importlib.import_module("pytest_imagetime.report.runs"), "merge_parts",
                        full_disk)
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
        "*sheets (expected <case id>.png, .jpg, .jpeg or .webp, such as "
        "*sheets/kitchen-pour-water-1.png); it holds 1 image files, such as "
        "kitchen-pour-water-one.png"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    written = [p for p in (pytester.path / "reports").rglob("*") if p.is_file()]
    assert written == []  # nothing stored, and the session's claim is released


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


# ------------------------------------------------------------------ item errors, one line each

def _three_cases_one_sheet(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [
        case_dict(f"kitchen-pour-water-{n}", variant=1 + n % 2,
                  setup={"scene": f"counter {n}", "style": "photorealistic",
                         "camera": "fixed side view"})
        for n in (1, 2, 3)])
    _sheet(pytester.mkdir("sheets") / "kitchen-pour-water-1.png")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_item_errors_print_one_line_each_and_a_count_of_each_reason(
        pytester: pytest.Pytester, workers: list[str]) -> None:
    _three_cases_one_sheet(pytester)
    result = pytester.runpytest_subprocess("kitchen.yaml", "--imagetime-model=files:sheets",
                                           "--imagetime-pass-threshold=0", *workers)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*= ImageTime item errors =*",
        "2 item errors, 1 reason:",
        "  2 x model files:sheets failed on <case>: no image for case '<case>': expected "
        "*sheets/<case>.png (or .jpg, .jpeg, .webp)",
    ])
    for n in (2, 3):
        line = (f"ERROR kitchen.yaml::kitchen-pour-water-{n}[[]files:sheets[]] - model "
                f"files:sheets failed on kitchen-pour-water-{n}: no image for case "
                f"'kitchen-pour-water-{n}': expected *sheets/kitchen-pour-water-{n}.png "
                f"(or .jpg, .jpeg, .webp)")
        # Listed once, in full (its rerun line names it again, in quotes).
        assert out.count(f"ERROR kitchen.yaml::kitchen-pour-water-{n}[") == 1, out
        assert any(fnmatch.fnmatch(text, line) for text in out.splitlines()), out
    assert "= ERRORS =" not in out and "ERROR at setup" not in out
    assert "Traceback" not in out
    assert result.parseoutcomes()["errors"] == 2  # pytest's counts still see them


def test_item_error_lines_name_nodes_as_pytest_does_from_another_directory(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _three_cases_one_sheet(pytester)
    root = pytester.path
    below = pytester.mkdir("below")
    monkeypatch.chdir(below)  # the root stays above while pytest runs from below it
    result = pytester.run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                          "--rootdir", str(root), str(root / "kitchen.yaml"),
                          f"--imagetime-model=files:{root / 'sheets'}",
                          "--imagetime-pass-threshold=0", "--imagetime-judge=pixel")
    lines = [line for line in result.stdout.lines if line.startswith("ERROR ")]
    assert len(lines) == 2, result.stdout.str()
    assert all(line.startswith("ERROR ../kitchen.yaml::") for line in lines), lines


def test_without_short_summary_only_the_counts_are_printed(pytester: pytest.Pytester) -> None:
    _three_cases_one_sheet(pytester)
    result = pytester.runpytest("kitchen.yaml", "--imagetime-model=files:sheets", "-rN")
    out = result.stdout.str()
    assert "2 item errors, 1 reason:" in out
    assert not [line for line in out.splitlines() if line.startswith("ERROR ")]


def test_a_setup_error_of_an_item_is_reported_without_building_a_traceback(
        pytester: pytest.Pytester) -> None:
    _three_cases_one_sheet(pytester)
    recorded = pytester.inline_run("kitchen.yaml", "--imagetime-model=files:sheets")
    errors = [r for r in recorded.getreports("pytest_runtest_logreport")
              if r.when == "setup" and r.failed]
    assert len(errors) == 2
    for report in errors:
        assert isinstance(report.longrepr, str)
        # The reason in one line, and the command that reruns the case alone: no traceback.
        reason, *rest = report.longrepr.split("\n")
        assert "no image for case" in reason
        assert len(rest) <= 1 and all(line.startswith("  rerun alone: pytest ") for line in rest)


_CASE_IDS = st.from_regex(r"[a-z]{3,8}-[a-z]{3,8}-[12]", fullmatch=True)


@settings(max_examples=100, deadline=None)
@given(cases=st.lists(_CASE_IDS, min_size=1, max_size=12, unique=True),
       kinds=st.lists(st.sampled_from(["no image for {c}: expected /d/{c}.png",
                                       "judge pixel failed on {c}: timeout",
                                       "cannot read the stored sheet /o/{c}.png"]),
                      min_size=12, max_size=12))
def test_reason_counts_add_up_and_join_what_differs_only_by_case(
        cases: list[str], kinds: list[str]) -> None:
    from pytest_imagetime.plugin.error_summary import ItemErrorLine, reason_counts, summary_lines

    errors = [ItemErrorLine(f"f.yaml::{c}[m]", c, kind.format(c=c))
              for c, kind in zip(cases, kinds, strict=False)]
    counts = reason_counts(errors)
    assert sum(n for n, _ in counts) == len(errors)
    assert len(counts) == len({kinds[i] for i in range(len(cases))})
    assert [n for n, _ in counts] == sorted((n for n, _ in counts), reverse=True)
    assert all("<case>" in reason for _, reason in counts)
    lines = summary_lines(errors, per_item=True)
    assert lines[:len(errors)] == [f"ERROR {e.nodeid} - {e.reason}" for e in errors]
    assert len(lines) == len(errors) + 1 + len(counts)


# ------------------------------------------------------------------ a crashed xdist worker

@pytest.mark.parametrize("kill", ["os._exit(3)", "os.kill(os.getpid(), signal.SIGKILL)"])
def test_an_item_that_kills_its_worker_is_an_error_in_the_reports(
        pytester: pytest.Pytester, kill: str) -> None:
    import json
    import xml.etree.ElementTree as ET

    from pytest_imagetime.report.json_report import validate_report

    write_case_file(pytester.path / "kitchen.yaml", [
        case_dict(f"kitchen-pour-water-{n}", variant=1 + n % 2,
                  setup={"scene": f"counter {n}", "style": "photorealistic",
                         "camera": "fixed side view"})
        for n in (1, 2, 3, 4)])
    pytester.makeconftest(f"""
        import os, signal

        def pytest_runtest_setup(item):
            if "kitchen-pour-water-3" in item.nodeid:
                {kill}
    """)
    result = pytester.runpytest_subprocess("kitchen.yaml", "--imagetime-model=procedural",
                                           "--imagetime-size=128", "-n", "2")
    result.assert_outcomes(passed=3, failed=1)  # pytest counts the crash once, as failed
    report = json.loads((pytester.path / "reports/procedural/pixel/report.json").read_text())
    validate_report(report)
    statuses = {i["case_id"]: i["status"] for i in report["items"]}
    assert len(report["items"]) == 4
    assert statuses == {"kitchen-pour-water-1": "passed", "kitchen-pour-water-2": "passed",
                        "kitchen-pour-water-3": "error", "kitchen-pour-water-4": "passed"}
    assert report["aggregate"]["errors"] == 1
    (error,) = report["errors"]
    assert error["case_id"] == "kitchen-pour-water-3"
    assert error["reason"].startswith("worker 'gw")
    assert "crashed while running 'kitchen.yaml::kitchen-pour-water-3[procedural]'" \
        in error["reason"]
    junit = ET.parse(pytester.path / "reports" / "junit.xml").getroot()
    cases = junit.findall(".//testcase")
    assert len(cases) == 4
    crashed = [c for c in cases if "kitchen-pour-water-3" in (c.get("name") or "")]
    assert len(crashed) == 1
    (element,) = crashed[0].findall("error")
    assert "crashed while running" in (element.get("message") or "")
    assert not [c for c in cases if c is not crashed[0] and list(c.iter("error"))]


def test_a_packaged_case_whose_worker_crashed_is_an_error_in_the_report(
        pytester: pytest.Pytester) -> None:
    import json

    # No case file here: the packaged cases, whose node ids are their bare file names. They
    # lie outside this folder, so a plugin (not a conftest here) kills the worker.
    pytester.makepyfile(crash_plugin="""
        import os

        def pytest_runtest_setup(item):
            if "kitchen-pour-water-2" in item.nodeid:
                os._exit(3)
    """)
    result = pytester.runpytest_subprocess("-p", "crash_plugin", "--imagetime-model=procedural",
                                           "--imagetime-size=128", "-k", "kitchen-pour-water",
                                           "-n", "2")
    result.assert_outcomes(passed=1, failed=1)
    assert "missing from the report" not in result.stdout.str()
    report = json.loads((pytester.path / "reports/procedural/pixel/report.json").read_text())
    assert {i["case_id"]: i["status"] for i in report["items"]}["kitchen-pour-water-2"] \
        == "error"


def test_the_tempviz_suite_refuses_an_unwritable_output_at_start_up_too(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.tempviz_data import write_tables

    write_tables(pytester.path / "tv", ["Maps"])
    (pytester.path / "afile").write_text("in the way")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("PYTEST_ADDOPTS", "")  # the TempViz suite asks a vlm judge
    result = pytester.runpytest_subprocess(
        "--imagetime-suite=tempviz", "--imagetime-tempviz-data=tv",
        "--imagetime-model=procedural", "--imagetime-judge-model=judge-x",
        "--imagetime-judge-price=2,8", "--imagetime-html=afile/site")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --imagetime-html=*afile/site: cannot write there: "
                                 "*afile is a file, not a folder"])


def test_a_reason_of_several_lines_is_printed_on_one() -> None:
    from pytest_imagetime.plugin.error_summary import ItemErrorLine, summary_lines

    errors = [ItemErrorLine(f"f.yaml::c{n}[m]", f"c{n}", f"judge failed on c{n}: HTTP 400\n"
                            f"  {{\"error\": \"bad\"}}\n") for n in (1, 2)]
    assert summary_lines(errors, per_item=True) == [
        'ERROR f.yaml::c1[m] - judge failed on c1: HTTP 400 | {"error": "bad"}',
        'ERROR f.yaml::c2[m] - judge failed on c2: HTTP 400 | {"error": "bad"}',
        "2 item errors, 1 reason:",
        '  2 x judge failed on <case>: HTTP 400 | {"error": "bad"}']
