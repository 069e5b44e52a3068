"""``plugin/report_writing.py``: a finished run's manifest, summary lines and the retiring of
a superseded baseline, asked directly of the run's reporter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.engine.run_spec import RunSpec
from pytest_imagetime.plugin.report_writing import (
    retire_superseded_baseline,
    run_manifest,
    write_summary,
)
from pytest_imagetime.plugin.reporter import ImagetimeReporter
from pytest_imagetime.rubric.facts import RUBRIC_VERSION
from tests.builders import case_dict, write_case_file
from tests.plugin.session_spy import run_with_spy

ARGS = ("kitchen.yaml", "--imagetime-model=procedural", "--imagetime-judge=pixel",
        "--imagetime-size=128")


@pytest.fixture
def reporter(pytester: pytest.Pytester) -> ImagetimeReporter:
    write_case_file(pytester.path / "kitchen.yaml", [case_dict()])
    recorder, spy = run_with_spy(pytester, *ARGS, "--imagetime-seed=5")
    recorder.assertoutcome(passed=1)
    found = spy.plugins["imagetime-reporter"]
    assert isinstance(found, ImagetimeReporter)
    return found


def _spec(reporter: ImagetimeReporter) -> RunSpec:
    [spec] = reporter.runs.values()
    return spec


class Lines:
    """The terminal reporter's two writing calls, kept as text."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str) -> None:
        self.lines.append(f"== {title}")

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_the_manifest_says_what_the_run_was(reporter: ImagetimeReporter) -> None:
    spec = _spec(reporter)
    manifest: dict[str, Any] = run_manifest(reporter, spec, [])
    assert manifest["model"]["spec"] == "procedural"
    assert manifest["judge"]["name"] == "pixel"
    assert (manifest["size"], manifest["seed"]) == (128, spec.run_seed)
    assert manifest["rubric_version"] == RUBRIC_VERSION
    assert manifest["run_dir"] == str(spec.paths.run_dir)
    assert (manifest["shard"], manifest["shard_source"]) == (None, None)


def test_the_summary_names_each_report(reporter: ImagetimeReporter) -> None:
    tr = Lines()
    write_summary(reporter, tr)
    [(path, _)] = reporter.reports
    assert tr.lines[0] == "== ImageTime summary"
    assert tr.lines[1].split()[0] == "model"
    assert f"report: {path}" in tr.lines
    assert f"junit: {reporter.options.junit}" in tr.lines  # written by default
    assert not any(line.startswith(("html:", "baseline")) for line in tr.lines)
    assert "== ImageTime gate" not in tr.lines


def _baseline(folder: Path) -> Path:
    folder.mkdir(parents=True)
    found = folder / "report.json"
    found.write_text("{}", encoding="utf-8")
    return found


def test_a_baseline_alone_in_its_folder_is_retired(reporter: ImagetimeReporter,
                                                   tmp_path: Path) -> None:
    spec = _spec(reporter)
    found = _baseline(tmp_path / "base" / "old-model" / "pixel")
    reporter.state.baseline_found[str(spec.paths.run_dir)] = found
    written = tmp_path / "base" / "procedural" / "pixel" / "report.json"
    retire_superseded_baseline(reporter, spec, written)
    assert not (tmp_path / "base" / "old-model").exists()
    assert reporter.retired_baselines == [found]


def test_a_baseline_beside_other_files_stays(reporter: ImagetimeReporter,
                                             tmp_path: Path) -> None:
    spec = _spec(reporter)
    found = _baseline(tmp_path / "base" / "old-model" / "pixel")
    (found.parent / "judgments").mkdir()
    reporter.state.baseline_found[str(spec.paths.run_dir)] = found
    retire_superseded_baseline(reporter, spec, tmp_path / "elsewhere.json")
    assert found.is_file() and reporter.retired_baselines == []


def test_a_folder_with_another_judge_keeps_its_parent(reporter: ImagetimeReporter,
                                                      tmp_path: Path) -> None:
    spec = _spec(reporter)
    found = _baseline(tmp_path / "base" / "old-model" / "pixel")
    _baseline(tmp_path / "base" / "old-model" / "vlm")
    reporter.state.baseline_found[str(spec.paths.run_dir)] = found
    retire_superseded_baseline(reporter, spec, tmp_path / "elsewhere.json")
    assert not found.parent.exists()
    assert (tmp_path / "base" / "old-model" / "vlm" / "report.json").is_file()


def test_the_report_just_written_or_none_is_not_retired(reporter: ImagetimeReporter,
                                                        tmp_path: Path) -> None:
    spec = _spec(reporter)
    retire_superseded_baseline(reporter, spec, tmp_path / "report.json")  # none was found
    found = _baseline(tmp_path / "base" / "procedural" / "pixel")
    reporter.state.baseline_found[str(spec.paths.run_dir)] = found
    retire_superseded_baseline(reporter, spec, found)
    assert found.is_file() and reporter.retired_baselines == []
