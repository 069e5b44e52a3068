"""Rerunning what failed: --lf and --ff select exactly the failures (pytest 8 and 9), a
failure prints a command that reruns its case alone, node ids of packaged cases work in any
directory, and the packaged cases can be copied out for editing."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.cli import main
from pytest_imagetime.plugin.collect import packaged_argument

# Overall of the procedural sheets lies around 9.15 under the pixel judge: some pass, some not.
SOME_FAIL = ("--imagetime-model=procedural", "--imagetime-size=128",
             "--imagetime-pass-threshold=9.2")


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")  # after pytester clears it


def _failed(result: pytest.RunResult) -> list[str]:
    return sorted(line.split()[1] for line in result.outlines if line.startswith("FAILED "))


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize("where", ["case-file", "packaged"])
def test_last_failed_and_failed_first_select_exactly_the_failures(
        pytester: pytest.Pytester, where: str, workers: list[str]) -> None:
    if where == "case-file":
        shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path)
        selection = ["constraints.yaml"]
    else:  # no case file here: the packaged cases, narrowed to one domain
        selection = ["-k", "constraints-"]
    first = pytester.runpytest(*selection, *SOME_FAIL, "-rf", *workers)
    outcomes = first.parseoutcomes()
    failures = _failed(first)
    assert outcomes["failed"] == len(failures) and 0 < len(failures) < 24
    last = pytester.runpytest(*selection, *SOME_FAIL, "--lf", "-rf", *workers)
    last.assert_outcomes(failed=len(failures))
    assert _failed(last) == failures
    assert "known failures not in selected tests" not in last.stdout.str()
    ordered = pytester.runpytest(*selection, *SOME_FAIL, "--ff", "-v", "-p", "no:xdist")
    ordered.assert_outcomes(failed=len(failures), passed=24 - len(failures))
    shown = [line.split()[0] for line in ordered.outlines
             if line.endswith("%]") and (" PASSED " in line or " FAILED " in line)]
    assert sorted(shown[:len(failures)]) == failures


def test_a_failure_prints_a_command_that_reruns_it_alone_anywhere(
        pytester: pytest.Pytester) -> None:
    # No case file in this directory: the packaged cases.
    result = pytester.runpytest(*SOME_FAIL, "-k", "constraints-do-not-touch-cup-2")
    result.assert_outcomes(failed=1)
    # One command (pytest's short summary repeats the failure text in full under CI=true).
    (line,) = {line.strip() for line in result.outlines if "rerun alone: " in line}
    words = shlex.split(line.split("rerun alone: ", 1)[1])
    assert words[:3] == ["pytest",
                         "constraints.yaml::constraints-do-not-touch-cup-2[procedural]",
                         "--imagetime-model=procedural"]
    assert "--imagetime-judge=pixel" in words and "--imagetime-size=128" in words
    elsewhere = pytester.mkdir("elsewhere")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(elsewhere)
        alone = pytester.runpytest(*words[1:])
    alone.assert_outcomes(failed=1)
    alone.stdout.fnmatch_lines(["FAILED constraints.yaml::constraints-do-not-touch-cup-2"
                                "[[]procedural[]]*"])
    # The README's form of a case file, and the summary's node id, outside a checkout.
    by_file = pytester.runpytest("cases/constraints.yaml", *SOME_FAIL, "--co", "-q")
    by_file.stdout.fnmatch_lines(["constraints.yaml::constraints-ball-misses-wall-1"
                                  "[[]procedural[]]", "24 tests collected*"])


def test_an_item_error_prints_its_rerun_command_too(pytester: pytest.Pytester,
                                                    tmp_path: Path) -> None:
    # One selected case has its sheet (a folder with none is refused at start-up), one not.
    Image.new("RGB", (128, 128), "white").save(tmp_path / "constraints-do-not-touch-cup-1.png")
    result = pytester.runpytest(f"--imagetime-model=files:{tmp_path}", "-k",
                                "constraints-do-not-touch-cup", "--imagetime-size=128")
    assert result.parseoutcomes()["errors"] == 1
    # The error in one line, then one command that reruns every failed or errored item.
    result.stdout.fnmatch_lines([
        "ERROR constraints.yaml::constraints-do-not-touch-cup-2[[]files:*[]] - model files:*",
        "1 item error, 1 reason:", "*",
        f"rerun them alone: pytest --lf --imagetime-model=files:{tmp_path} "
        f"--imagetime-judge=pixel --imagetime-size=128"])
    # The item's own report (the JUnit files' error text) names its own rerun.
    report = pytester.path / "reports"
    junit = next(report.rglob("junit.xml")).read_text()
    assert (f"rerun alone: pytest &apos;constraints.yaml::constraints-do-not-touch-cup-2[files:"
            f"{tmp_path}]&apos;" in junit
            or f"rerun alone: pytest 'constraints.yaml::constraints-do-not-touch-cup-2[files:"
            f"{tmp_path}]'" in junit)


def test_packaged_arguments_name_the_packaged_file_only_when_none_is_here(
        tmp_path: Path) -> None:
    packaged = builtin_cases_dir() / "kitchen.yaml"
    assert packaged_argument("kitchen.yaml::k-1[m]", tmp_path) == f"{packaged}::k-1[m]"
    assert packaged_argument("cases/kitchen.yaml", tmp_path) == str(packaged)
    for kept in ("nope.yaml", "sub/kitchen.yaml", "test_x.py::t", "kitchen.yaml.bak", "-k"):
        assert packaged_argument(kept, tmp_path) == kept
    (tmp_path / "kitchen.yaml").write_text("")
    assert packaged_argument("kitchen.yaml::k-1[m]", tmp_path) == "kitchen.yaml::k-1[m]"


def test_cases_copy_writes_editable_case_files(pytester: pytest.Pytester,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    target = pytester.path / "mine"
    assert main(["cases", "copy", str(target)]) == 0
    out = capsys.readouterr().out
    assert f"copied 22 case file(s), 750 cases, to {target}" in out
    assert sorted(p.name for p in target.iterdir()) == sorted(
        p.name for p in builtin_cases_dir().glob("*.yaml"))
    assert main(["cases", "copy", str(target), "kitchen"]) == 2
    assert "1 file(s) exist already, e.g. " in capsys.readouterr().err
    assert main(["cases", "copy", str(target), "kitchen", "--force"]) == 0
    assert main(["cases", "copy", str(target), "kitchn"]) == 2
    assert "no packaged case file 'kitchn'; packaged: animation, " in capsys.readouterr().err
    (pytester.path / "afile").write_text("")
    assert main(["cases", "copy", str(pytester.path / "afile")]) == 2
    assert "is a file, not a directory" in capsys.readouterr().err
    assert main(["cases", "list"]) == 0
    assert "kitchen.yaml                   58 cases" in capsys.readouterr().out
    edited = target / "constraints.yaml"
    edited.write_text(edited.read_text().replace("constraints-do-not-touch-cup-1",
                                                 "constraints-do-not-touch-cup-9"))
    result = pytester.runpytest("mine/constraints.yaml", "--imagetime-model=procedural",
                                "--co", "-q", "-k", "cup-9")
    result.stdout.fnmatch_lines(["mine/constraints.yaml::constraints-do-not-touch-cup-9*",
                                 "1/24 tests collected*"])
