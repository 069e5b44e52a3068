"""Progress lines: content, pacing, and their place in real runs (also under xdist)."""

from __future__ import annotations

import shutil

import pytest

from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.plugin.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_report_counts_overall_spend_and_eta() -> None:
    lines: list[str] = []
    clock = Clock()
    progress = Progress(10, lines.append, clock)
    progress.expect(4)
    clock.now += 5
    progress.item(8.0, False, 0.01)
    assert lines == []  # less than ten seconds since the start
    clock.now += 10
    progress.item(None, True, 0.0)
    assert lines == ["[imagetime] 2/4 done, 1 errors, Overall 8.00, spent $0.01, elapsed 15s, "
                     "ETA 15s"]
    progress.item(6.0, False, 0.02)
    progress.item(7.0, False, 0.0)
    assert lines[-1] == ("[imagetime] 4/4 done, 1 errors, Overall 7.00, spent $0.03, "
                         "elapsed 15s, ETA 0s")


def test_zero_turns_progress_off() -> None:
    lines: list[str] = []
    progress = Progress(0, lines.append, Clock())
    progress.expect(1)
    progress.item(5.0, False, 0.0)
    assert lines == []


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_runs_print_progress(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                             workers: list[str]) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    result = pytester.runpytest("constraints.yaml", "--imagetime-model=procedural",
                                "--imagetime-size=128", "--imagetime-progress=0.000001",
                                *workers)
    result.assert_outcomes(passed=24)
    result.stdout.fnmatch_lines(["*[[]imagetime[]] 1/24 done, 0 errors, Overall *",
                                 "*[[]imagetime[]] 24/24 done, 0 errors, Overall *, ETA 0s"])
