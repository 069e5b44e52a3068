"""Third-party backends found through entry points, and judge failures as item errors."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, write_case_file

JUDGES = '''
from pytest_imagetime.rubric.judgment import Judgment, JudgeError
from pytest_imagetime.rubric.facts import RUBRIC_VERSION

DIMS = frozenset({"C0", "D0"})


class _Base:
    scored_dims = DIMS

    def __init__(self, argument=None):
        self.argument = argument

    def config(self):
        return {"judge": self.name, "judge_model": "fixture/1"}


class BrokenJudge(_Base):
    name = "broken"

    def judge(self, *, sheet):
        raise JudgeError("HTTP 503 from the judge endpoint after 3 retries")


class LiarJudge(_Base):
    name = "liar"

    def judge(self, *, sheet):
        return Judgment(judge="liar", judge_model="fixture/1", rubric_version=RUBRIC_VERSION,
                        prompt_version=None, scores={"C0": 11, "D0": 5, "D13": 4})


class CountingJudge(_Base):
    name = "counting"
    calls = 0

    def judge(self, *, sheet):
        type(self).calls += 1
        return Judgment(judge="counting", judge_model="fixture/1",
                        rubric_version=RUBRIC_VERSION, prompt_version=None,
                        scores={"C0": 9, "D0": 8})
'''


def _install(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny installed distribution: a module plus dist-info with entry points."""
    site = pytester.mkdir("site")
    (site / "fixture_judges.py").write_text(textwrap.dedent(JUDGES))
    info = site / "fixture_judges-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fixture-judges\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[imagetime.judges]\nbroken = fixture_judges:BrokenJudge\n"
        "liar = fixture_judges:LiarJudge\ncounting = fixture_judges:CountingJudge\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", str(site))
    write_case_file(pytester.path / "k.yaml", [case_dict()])


def _report(out: Path) -> dict[str, object]:
    (path,) = out.rglob("report.json")
    report: dict[str, object] = json.loads(path.read_text())
    validate_report(report)
    return report


def test_failing_judge_makes_an_error_never_a_zero(pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _install(pytester, monkeypatch)
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural",
                                "--imagetime-judge=broken", "--imagetime-size=128")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*judge broken failed on kitchen-pour-water-1: HTTP 503 from "
                                 "the judge endpoint after 3 retries*"])
    report = _report(pytester.path / "reports")
    aggregate = report["aggregate"]
    assert isinstance(aggregate, dict)
    assert aggregate["errors"] == 1 and aggregate["overall"] is None
    assert not list((pytester.path / "reports").rglob("judgments/*.json"))


def test_invalid_judgment_is_an_error_with_the_reason(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _install(pytester, monkeypatch)
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural",
                                "--imagetime-judge=liar", "--imagetime-size=128")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*invalid judgment from liar: C0=11 is outside 0-10; "
                                 "D13 must be null for this case (prompt-only)*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_third_party_judge_runs_and_is_resumed(pytester: pytest.Pytester,
                                               monkeypatch: pytest.MonkeyPatch,
                                               workers: list[str]) -> None:
    _install(pytester, monkeypatch)
    args = ["k.yaml", "--imagetime-model=procedural", "--imagetime-judge=counting",
            "--imagetime-size=128", *workers]
    # xdist workers take the sys.path frozen when xdist was imported: a fresh process sees
    # the distribution the way an installed one is seen.
    run = pytester.runpytest_subprocess if workers else pytester.runpytest
    run(*args).assert_outcomes(passed=1)
    run(*args).assert_outcomes(passed=1)
    report = _report(pytester.path / "reports")
    items = report["items"]
    assert isinstance(items, list)
    assert items[0]["judge_model"] == "fixture/1" and not items[0]["judged"]
