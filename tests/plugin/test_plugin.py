"""The plugin end to end, through pytester: collection, items, stores, reports, xdist."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cases.loading import builtin_cases_dir, case_files, load_case_file
from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, write_case_file

SMALL = "--imagetime-size=128"


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """These runs use the offline pixel judge unless a test names another (after pytester,
    which clears PYTEST_ADDOPTS)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")


def _two_cases(pytester: pytest.Pytester, name: str = "kitchen.yaml") -> Path:
    return write_case_file(pytester.path / name, [
        case_dict("kitchen-pour-water-1"),
        case_dict("kitchen-pour-water-2", variant=2,
                  setup={"scene": "a marble counter", "style": "flat illustration",
                         "camera": "top-down view"}),
    ])


def _reports(out: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted(out.rglob("report.json")):
        report = json.loads(path.read_text())
        validate_report(report)
        found[str(path.relative_to(out).parent)] = report
    return found


def _packaged_count() -> int:
    return sum(len(load_case_file(f)) for f in case_files([builtin_cases_dir()]))


def test_without_model_nothing_is_collected(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    assert pytester.runpytest().ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_case_file_run_writes_reports(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    result = pytester.runpytest("kitchen.yaml", "--imagetime-model=procedural", SMALL, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "kitchen.yaml::kitchen-pour-water-1?procedural? PASSED*",
        "*ImageTime summary*",
        "model*N*pass*fail*err*C mean*D mean*Overall*layout-ok%*proto*L0*L6*judge",
        "procedural*2*2*0*0*pixel (pixel-metrics/*",
        "report: *procedural*pixel*report.json",
        "junit: *junit.xml",
    ])
    reports = _reports(pytester.path / "reports")
    assert list(reports) == ["procedural/pixel"]
    report = reports["procedural/pixel"]
    assert report["aggregate"]["n"] == 2
    assert report["manifest"]["judge"]["config"]["judge"] == "pixel"
    low, high = report["confidence"]["overall"]
    assert low <= report["aggregate"]["overall"] <= high
    item = report["items"][0]
    assert item["status"] == "passed" and item["generated"] and item["judged"]
    assert Path(item["image"]).is_file() and Path(item["judgment"]).is_file()
    junit = ET.parse(pytester.path / "reports" / "junit.xml").getroot()
    assert junit.get("tests") == "2"
    names = {p.get("name") for p in junit.iter("property")}
    assert {"imagetime.overall", "imagetime.model", "imagetime.passed"} <= names
    outputs = [case.findtext("system-out", "") for case in junit.iter("testcase")]
    assert all("scores: Overall " in out and "dims: C0=" in out for out in outputs)


def test_rerun_reuses_everything_and_regenerate_redoes(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    args = ("kitchen.yaml", "--imagetime-model=procedural", SMALL)
    pytester.runpytest(*args).assert_outcomes(passed=2)
    first = _reports(pytester.path / "reports")["procedural/pixel"]
    # A finished run is answered item by item from the store: no generation thread starts.
    pytester.makeconftest("""
        from pytest_imagetime.plugin.state import state_key

        def pytest_sessionfinish(session):
            print("pipeline planned:", session.config.stash[state_key].pipeline.planned)
    """)
    resumed = pytester.runpytest(*args, "-s")
    resumed.assert_outcomes(passed=2)
    resumed.stdout.fnmatch_lines(["pipeline planned: False"])
    second = _reports(pytester.path / "reports")["procedural/pixel"]
    assert not any(i["generated"] or i["judged"] for i in second["items"])
    assert first["aggregate"] == second["aggregate"]
    pytester.runpytest(*args, "--imagetime-rejudge").assert_outcomes(passed=2)
    third = _reports(pytester.path / "reports")["procedural/pixel"]
    assert all(i["judged"] and not i["generated"] for i in third["items"])
    redone = pytester.runpytest(*args, "--imagetime-regenerate", "-s")
    redone.assert_outcomes(passed=2)
    redone.stdout.fnmatch_lines(["pipeline planned: True"])
    fourth = _reports(pytester.path / "reports")["procedural/pixel"]
    assert all(i["generated"] for i in fourth["items"])


def test_changed_inputs_redo_only_what_they_touch(pytester: pytest.Pytester) -> None:
    path = _two_cases(pytester)
    args = ("kitchen.yaml", "--imagetime-model=procedural", SMALL)
    pytester.runpytest(*args).assert_outcomes(passed=2)
    text = path.read_text().replace("The glass is half full.", "The glass is a third full.", 1)
    path.write_text(text)
    pytester.runpytest(*args).assert_outcomes(passed=2)
    items = {i["case_id"]: i for i in _reports(pytester.path / "reports")["procedural/pixel"]
             ["items"]}
    # The state text is not in the prompt: same image, new judgment for the changed case only.
    assert not items["kitchen-pour-water-1"]["generated"]
    assert items["kitchen-pour-water-1"]["judged"]
    assert not items["kitchen-pour-water-2"]["judged"]
    pytester.runpytest(*args, "--imagetime-size=160").assert_outcomes(passed=2)
    items2 = _reports(pytester.path / "reports")["procedural/pixel"]["items"]
    assert all(i["generated"] for i in items2)


def test_damaged_store_is_redone(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    args = ("kitchen.yaml", "--imagetime-model=procedural", SMALL)
    pytester.runpytest(*args).assert_outcomes(passed=2)
    images = pytester.path / "reports" / "procedural" / "images"
    (images / "kitchen-pour-water-1.png").write_bytes(b"half a file")
    (pytester.path / "reports" / "procedural" / "pixel" / "judgments" /
     "kitchen-pour-water-2.json").write_text("{")
    pytester.runpytest(*args).assert_outcomes(passed=2)
    items = {i["case_id"]: i for i in _reports(pytester.path / "reports")["procedural/pixel"]
             ["items"]}
    assert items["kitchen-pour-water-1"]["generated"]
    assert not items["kitchen-pour-water-2"]["generated"]
    assert items["kitchen-pour-water-2"]["judged"]


def test_any_directory_collects_the_packaged_cases(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own="def test_team(): pass")
    result = pytester.runpytest("--imagetime-model=procedural", "--collect-only", "-q")
    n = _packaged_count()
    result.stdout.fnmatch_lines([f"{n} tests collected*"])
    assert "test_own.py" not in result.stdout.str()
    assert "constraints.yaml::constraints-" in result.stdout.str()


def test_plain_pytest_runs_own_tests_only(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own="def test_team(): pass")
    _two_cases(pytester)
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_session_without_a_model_imports_only_the_options(pytester: pytest.Pytester) -> None:
    # Every pytest run of an environment with the plugin installed loads it: without a model
    # it must not import the session, the cases, the backends, numpy or the reports.
    pytester.makepyfile(test_own="""
        import sys

        def test_modules():
            heavy = ("pytest_imagetime.plugin.start", "pytest_imagetime.plugin.tempviz_session",
                     "pytest_imagetime.cases.loading", "pytest_imagetime.engine.runner",
                     "numpy", "PIL", "yaml", "jsonschema")
            assert [m for m in heavy if m in sys.modules] == []
    """)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_collecting_imports_neither_the_runner_nor_the_reports(
        pytester: pytest.Pytester) -> None:
    # --collect-only, a dry run or a -k that selects nothing loads the backends it names
    # and the cases, never what runs an item (runner, pipeline, records, Pillow, numpy) or
    # reports on it (reports, gate).
    _two_cases(pytester)
    pytester.makeconftest("""
        import sys

        HEAVY = ("pytest_imagetime.engine.runner", "pytest_imagetime.engine.pipeline",
                 "pytest_imagetime.engine.record", "pytest_imagetime.engine.conditions",
                 "pytest_imagetime.report.json_report", "pytest_imagetime.report.junit",
                 "pytest_imagetime.gate.compare", "pytest_imagetime.engine.estimate",
                 "PIL", "numpy")

        def pytest_unconfigure(config):
            loaded = [m for m in HEAVY if m in sys.modules]
            open("loaded.txt", "w").write(" ".join(loaded) or "none")
    """)
    pytester.runpytest_subprocess("kitchen.yaml", "--imagetime-model=procedural",
                                  "--imagetime-judge=pixel", "--collect-only", "-q")
    assert (pytester.path / "loaded.txt").read_text() == "none"
    # A run loads them, and draws, measures and reports as before.
    result = pytester.runpytest_subprocess("kitchen.yaml", "--imagetime-model=procedural",
                                           "--imagetime-judge=pixel", "-q")
    result.assert_outcomes(passed=2)
    assert "numpy" in (pytester.path / "loaded.txt").read_text()
    assert len(_reports(pytester.path / "reports")["procedural/pixel"]["items"]) == 2


def test_markers_and_keywords_select(pytester: pytest.Pytester) -> None:
    args = ["--imagetime-model=procedural", "--collect-only", "-q", "--strict-markers"]
    l6 = pytester.runpytest(*args, "-m", "imagetime_L6")
    constraint_ids = [c.id for f in case_files([builtin_cases_dir()])
                      for c in load_case_file(f) if c.applicable.constraint]
    l6.stdout.fnmatch_lines([f"{len(constraint_ids)}/{_packaged_count()} tests collected*"])
    selected = {line.split("::")[1].split("[")[0] for line in l6.stdout.lines if "::" in line}
    assert selected == set(constraint_ids)
    one = pytester.runpytest(*args, "-k", constraint_ids[0])
    one.stdout.fnmatch_lines([f"*::{constraint_ids[0]}?procedural?", "1/* tests collected*"])
    kitchen = pytester.runpytest(*args, "-m", "imagetime_domain_kitchen and imagetime_medium")
    assert "constraints.yaml" not in kitchen.stdout.str()


def test_ini_options(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    pytester.makeini("""
        [pytest]
        imagetime_model = procedural procedural:copied
        imagetime_size = 128
        imagetime_out = ci-out
        imagetime_pass_threshold = 4.5
    """)
    result = pytester.runpytest("kitchen.yaml")
    result.assert_outcomes(passed=2, failed=2)
    reports = _reports(pytester.path / "ci-out")
    assert set(reports) == {"procedural/pixel", "procedural-copied/pixel"}
    assert reports["procedural/pixel"]["manifest"]["pass_threshold"] == 4.5


def test_broken_control_fails_with_a_readable_explanation(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    result = pytester.runpytest("kitchen.yaml", "--imagetime-model=procedural:copied", SMALL)
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "Traceback" not in out and "def runtest" not in out
    result.stdout.fnmatch_lines([
        "*kitchen-pour-water-1 ?procedural:copied? judged by pixel: * not met",
        "*cap copied-phases*copied_phases*",
        "*scores: C mean*Overall*",
        "*image: *procedural-copied*images*kitchen-pour-water-1.png",
    ])
    report = _reports(pytester.path / "reports")["procedural-copied/pixel"]
    assert report["aggregate"]["labels"]["copied_phases"] == 2


def test_bad_case_file_is_a_collection_error_naming_file_case_field(
        pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "bad.yaml", [case_dict(difficulty="trivial")])
    _two_cases(pytester)
    result = pytester.runpytest(".", "--imagetime-model=procedural", SMALL)
    result.assert_outcomes(errors=1)
    pytester.runpytest(".", "--imagetime-model=procedural", SMALL,
                       "--continue-on-collection-errors").assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*bad.yaml:*: case 'kitchen-pour-water-1': field 'difficulty': 'trivial' is not "
        "accepted; use one of \"easy\", \"medium\", \"hard\"",
    ])
    assert "Traceback" not in result.stdout.str()


def test_files_model_missing_image_is_an_error(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    sheets = pytester.mkdir("sheets")
    pytester.runpytest("kitchen.yaml", "--imagetime-model=procedural", SMALL)
    shutil.copy(pytester.path / "reports/procedural/images/kitchen-pour-water-1.png",
                sheets / "kitchen-pour-water-1.png")
    (pytester.path / "reports" / "junit.xml").unlink()
    result = pytester.runpytest("kitchen.yaml", f"--imagetime-model=files:{sheets}", SMALL,
                                "--junitxml=own.xml")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"*no image for case 'kitchen-pour-water-2': expected "
                                 f"{sheets}/kitchen-pour-water-2.png*"])
    (report,) = [r for k, r in _reports(pytester.path / "reports").items() if "files" in k]
    assert report["aggregate"]["errors"] == 1 and report["aggregate"]["judged"] == 1
    assert report["errors"][0]["reason"].startswith("model files:")
    error_item = next(i for i in report["items"] if i["status"] == "error")
    assert error_item["overall"] is None and all(v is None for v in error_item["scores"].values())
    # pytest's --junitxml is the one JUnit file: scores in each case's system-out.
    assert not (pytester.path / "reports" / "junit.xml").exists()
    pytests = ET.parse(pytester.path / "own.xml").getroot()
    assert pytests.find("testsuite").get("errors") == "1"  # type: ignore[union-attr]
    outputs = {case.get("name"): case.findtext("system-out", "")
               for case in pytests.iter("testcase")}
    assert "scores: Overall " in outputs[f"kitchen-pour-water-1[files:{sheets}]"]
    assert ": error: model files:" in outputs[f"kitchen-pour-water-2[files:{sheets}]"]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--imagetime-model=nope", "--imagetime-model=nope: unknown model 'nope'; available: "
                                   "bfl, diffusers, files, flux, flux-dev, *, procedural, *"),
        ("--imagetime-model=procedural:wobbly", "--imagetime-model=procedural:wobbly: *wobbly*"),
        ("--imagetime-judge=oracle", "--imagetime-judge=oracle: unknown judge 'oracle'*"),
        ("--imagetime-size=12", "--imagetime-size=12: give the sheet size in pixels, an "
                                "integer from 64 to 8192"),
        ("--imagetime-pass-threshold=high", "--imagetime-pass-threshold=high: give a number "
                                            "from 0 to 10"),
        ("--imagetime-setting=video", "--imagetime-setting=video: use one of prompt-only, "
                                      "scaffold"),
        ("--imagetime-model=files:/no/such/dir", "*files model: '/no/such/dir' is not a "
                                                 "directory"),
    ],
)
def test_bad_options_are_usage_errors(pytester: pytest.Pytester, option: str,
                                      message: str) -> None:
    extra = [] if option.startswith("--imagetime-model") else ["--imagetime-model=procedural"]
    result = pytester.runpytest(option, *extra)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


def _aggregate_without_timing(out: Path) -> dict[str, Any]:
    return {k: r["aggregate"] for k, r in _reports(out).items()}


@pytest.mark.parametrize("workers", ["0", "2"])
def test_xdist_gives_the_serial_aggregate(pytester: pytest.Pytester, workers: str) -> None:
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    args = ["constraints.yaml", "--imagetime-model=procedural",
            "--imagetime-model=procedural:shuffled", SMALL]
    serial = pytester.runpytest(*args, "--imagetime-out=serial")
    parallel = pytester.runpytest(*args, "-n", workers, "--imagetime-out=parallel")
    assert parallel.parseoutcomes() == serial.parseoutcomes()
    assert _aggregate_without_timing(pytester.path / "serial") == _aggregate_without_timing(
        pytester.path / "parallel")
    parallel.stdout.fnmatch_lines(["*ImageTime summary*"])


def test_interrupted_run_resumes_with_only_the_missing_items(pytester: pytest.Pytester) -> None:
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")
    args = ["constraints.yaml", "--imagetime-model=procedural", SMALL]
    # A run that stopped after the first three items (as a killed one would have).
    pytester.runpytest(*args, "--maxfail=1", "-k", "ball or cup").assert_outcomes(passed=6)
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=24)
    items = _reports(pytester.path / "reports")["procedural/pixel"]["items"]
    redone = {i["case_id"] for i in items if i["generated"] or i["judged"]}
    assert len(redone) == 18
    assert not any("ball" in c or "cup" in c for c in redone)


def test_hooks_add_conditions_and_extend_the_report(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    pytester.makeconftest("""
        def pytest_imagetime_item_conditions(case, outcome, config):
            if case.variant == 2:
                return [f"team rule: variant 2 needs D9 >= 11 (got {outcome.record.scores['D9']})"]
            return None

        def pytest_imagetime_update_report(report, config):
            report["extra"] = {"checkpoint": "step-1200"}
    """)
    result = pytester.runpytest("kitchen.yaml", "--imagetime-model=procedural", SMALL)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*team rule: variant 2 needs D9 >= 11 (got *)"])
    report = _reports(pytester.path / "reports")["procedural/pixel"]
    assert report["extra"] == {"checkpoint": "step-1200"}


def test_help_lists_every_option(pytester: pytest.Pytester) -> None:
    """argparse formats help texts with %: a stray one would break ``pytest --help``."""
    result = pytester.runpytest("--help")
    assert result.ret == 0
    text = result.stdout.str()
    for option in ("--imagetime-model=", "--imagetime-gate-significant", "--imagetime-grid=",
                   "--imagetime-devices=", "--imagetime-reference-model="):
        assert option in text
