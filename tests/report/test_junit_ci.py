"""Both JUnit files as CI readers take them: valid against the JUnit schema of Jenkins'
xUnit plugin, the scores reaching the page (failure text, system-out, suite properties),
one file by default, the same failure messages under xdist as serially."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.engine.record import ItemRecord
from pytest_imagetime.report.junit import case_output, write_junit
from tests.engine.test_record import records
from tests.junit_schema import assert_valid_junit, violations

MODELS = ("--imagetime-model=procedural", "--imagetime-model=procedural:shuffled")


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")


def _run(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    result = pytester.runpytest("constraints.yaml", *MODELS, "--imagetime-size=128", *extra)
    result.assert_outcomes(passed=24, failed=24)
    return result


def _cases(root: ET.Element) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in root.iter("testcase")}


def _failure_messages(root: ET.Element) -> dict[str, str]:
    return {name: failure.get("message", "") for name, case in _cases(root).items()
            if (failure := case.find("failure")) is not None}


def test_the_checker_refuses_what_the_schema_refuses() -> None:
    bad = ET.fromstring(
        '<testsuites skipped="0"><testsuite name="s" tests="1" failures="0" errors="0" '
        'time="1,5"><testcase name="c" file="x.py"><properties><property name="a" '
        'value="1"/></properties></testcase><testcase classname="k"/></testsuite>'
        '</testsuites>')
    assert violations(bad) == [
        "testsuites: attribute 'skipped' is not allowed on <testsuites>",
        "testsuites/testsuite[0]: time='1,5' is not a number of seconds",
        "testsuites/testsuite[0]/testcase[0]: attribute 'file' is not allowed on <testcase>",
        "testsuites/testsuite[0]/testcase[0]/properties[0]: <properties> is not allowed "
        "inside <testcase>",
        "testsuites/testsuite[0]/testcase[1]: <testcase> needs the attribute 'name'",
    ]
    good = ET.fromstring(
        '<testsuites><testsuite name="s" tests="1" failures="1" errors="0" time="1,234.5">'
        '<properties><property name="a" value="1"/></properties><testcase name="c">'
        '<failure message="m">text</failure><system-out>out</system-out></testcase>'
        '</testsuite></testsuites>')
    assert violations(good) == []


def test_the_plugins_file_is_valid_and_shows_the_scores(pytester: pytest.Pytester) -> None:
    _run(pytester)
    root = assert_valid_junit(pytester.path / "reports" / "junit.xml")
    assert all(case.find("properties") is None for case in root.iter("testcase"))
    cases = _cases(root)
    passed = cases["constraints-do-not-touch-cup-1[procedural]"]
    out = passed.findtext("system-out", "")
    assert out.startswith("constraints-do-not-touch-cup-1[procedural]: passed\nscores: "
                          "Overall ")
    assert "dims: C0=" in out and "judge: pixel (pixel-metrics/" in out
    assert "[[ATTACHMENT|reports/procedural/images/constraints-do-not-touch-cup-1.png]]" in out
    failed = cases["constraints-do-not-touch-cup-1[procedural:shuffled]"]
    failure = failed.find("failure")
    assert failure is not None and "scores: C mean" in (failure.text or "")
    assert failure.get("message") == (failure.text or "").splitlines()[0]
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    props = {p.get("name"): p.get("value") for p in
             suites["imagetime[procedural:shuffled|pixel]"].iter("property")}
    assert props["imagetime.model"] == "procedural:shuffled"
    assert props["imagetime.failed"] == "24" and float(props["imagetime.overall"] or 0) > 0


def test_pytests_file_is_the_one_file_and_valid(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--junitxml=ci.xml")
    assert not (pytester.path / "reports" / "junit.xml").exists()
    assert "junit: " not in result.stdout.str()
    root = assert_valid_junit(pytester.path / "ci.xml")
    assert not [p for case in root.iter("testcase") for p in case.iter("property")]
    cases = _cases(root)
    out = cases["constraints-do-not-touch-cup-1[procedural:shuffled]"].findtext("system-out", "")
    assert out.startswith("constraints-do-not-touch-cup-1[procedural:shuffled]: failed\n")
    suite_props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert suite_props["imagetime[procedural|pixel].passed"] == "24"
    assert suite_props["imagetime[procedural:shuffled|pixel].failed"] == "24"
    # Asked for by name, the plugin's file is written beside it.
    _run(pytester, "--junitxml=ci.xml", "--imagetime-junit=own.xml")
    assert_valid_junit(pytester.path / "own.xml")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_xunit1_keeps_case_properties_with_the_outcome(pytester: pytest.Pytester,
                                                       workers: list[str]) -> None:
    _run(pytester, "-o", "junit_family=xunit1", "--junitxml=ci.xml",
         "--imagetime-junit=own.xml", *workers)
    for name in ("ci.xml", "own.xml"):
        cases = _cases(ET.parse(pytester.path / name).getroot())
        statuses = {case_name: {p.get("name"): p.get("value") for p in case.iter("property")}
                    ["imagetime.status"] for case_name, case in cases.items()}
        assert set(statuses.values()) == {"passed", "failed"}, name
        assert statuses["constraints-do-not-touch-cup-1[procedural]"] == "passed"
        assert statuses["constraints-do-not-touch-cup-1[procedural:shuffled]"] == "failed"


def test_under_xdist_the_files_read_as_serially(pytester: pytest.Pytester) -> None:
    _run(pytester, "--junitxml=serial.xml", "--imagetime-junit=serial-own.xml")
    _run(pytester, "-n", "2", "--junitxml=xdist.xml", "--imagetime-junit=xdist-own.xml")
    serial = assert_valid_junit(pytester.path / "serial-own.xml")
    xdist = assert_valid_junit(pytester.path / "xdist-own.xml")
    messages = _failure_messages(xdist)
    assert len(messages) == 24 and not any(m.startswith("[gw") for m in messages.values())
    assert messages == _failure_messages(serial)
    assert all(" condition" in m and "not met" in m for m in messages.values())
    for name in ("serial.xml", "xdist.xml"):
        root = assert_valid_junit(pytester.path / name)
        outputs = {n: c.findtext("system-out", "") for n, c in _cases(root).items()}
        assert len(outputs) == 48 and all(": passed\n" in o or ": failed\n" in o
                                          for o in outputs.values())
    assert {n: c.findtext("system-out") for n, c in _cases(serial).items()} == \
        {n: c.findtext("system-out") for n, c in _cases(xdist).items()}


def test_an_item_error_reads_as_an_error_on_both(pytester: pytest.Pytester,
                                                 tmp_path: Path) -> None:
    sheets = tmp_path / "sheets"
    sheets.mkdir()
    # One selected case has its sheet (a folder with none is refused at start-up), one not.
    Image.new("RGB", (128, 128), "white").save(sheets / "constraints-do-not-touch-cup-2.png")
    result = pytester.runpytest("constraints.yaml", f"--imagetime-model=files:{sheets}",
                                "--imagetime-size=128", "-k", "cup-1 or cup-2",
                                "--junitxml=ci.xml", "--imagetime-junit=own.xml")
    assert result.parseoutcomes()["errors"] == 1
    for name in ("ci.xml", "own.xml"):
        root = assert_valid_junit(pytester.path / name)
        (case,) = [c for c in root.iter("testcase") if "cup-1" in (c.get("name") or "")]
        assert case.find("error") is not None
        out = case.findtext("system-out", "")
        assert ": error: model files:" in out and "no image for case" in out, name


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(records, max_size=8, unique_by=lambda r: r.key),
       st.text(st.characters(codec="utf-8", exclude_characters="\r")))
def test_any_records_give_a_valid_file_that_shows_each_cases_scores(
        tmp_path: Path, listed: list[ItemRecord], message: str) -> None:
    path = tmp_path / "junit.xml"
    write_junit(path, listed, {r.key: message for r in listed[::2]})
    root = assert_valid_junit(path)
    shown = {case.get("name"): case.findtext("system-out", "") for case in root.iter("testcase")}
    assert len(shown) == len(listed)
    for record in listed:
        # As XML reads text back: line ends as "\n", what it cannot hold as "?".
        text = case_output(record).replace("\r\n", "\n").replace("\r", "\n")
        expected = "".join("?" if (ord(c) < 32 and c not in "\t\n") or c in "\ufffe\uffff"
                           else c for c in text)
        assert shown[f"{record.case_id}[{record.model}]"] == expected
