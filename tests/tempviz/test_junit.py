"""The TempViz JUnit file: one suite per run, "no" answers as failures, errors as errors."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_imagetime.tempviz.junit import case_output, junit_case, write_junit
from pytest_imagetime.tempviz.record import TempvizRecord
from tests.junit_schema import assert_valid_junit


def _record(index: str = "0", category: str = "Maps", model: str = "m", status: str = "passed",
            **values: Any) -> TempvizRecord:
    record = TempvizRecord(key=f"{category}-{index}[{model}]", id=f"{category}-{index}",
                           category=category, index=index, promptcategory="p",
                           difficulty="easy", prompt="a map of a city", model=model,
                           judge="judge-simple", run_dir="out", status=status, q1="yes",
                           q2="no", q3=None)
    return replace(record, **values)


def test_the_output_lists_answers_prompt_judge_and_attachment(tmp_path: Path) -> None:
    image = tmp_path / "images" / "Maps-0.png"
    record = _record(image=str(image))
    assert case_output(record, root=tmp_path).splitlines() == [
        "Maps-0[m]: passed", "answers: q1=yes q2=no q3=-", "prompt: a map of a city",
        "judge: judge-simple", f"image: {image}", "[[ATTACHMENT|images/Maps-0.png]]"]


def test_an_errors_reason_is_on_its_first_line() -> None:
    lines = case_output(_record(status="error", error="model failed")).splitlines()
    assert lines[0] == "Maps-0[m]: error: model failed"
    assert not any(line.startswith("image:") for line in lines)


def test_a_failure_is_summed_up_by_its_first_message_line() -> None:
    failed = junit_case(_record(status="failed"), {"Maps-0[m]": "\n  q2: no\nmore"})
    assert (failed.status, failed.summary, failed.message) == ("failed", "q2: no",
                                                               "\n  q2: no\nmore")
    assert junit_case(_record(status="failed"), {}).summary == "not every answer is yes"
    errored = junit_case(_record(status="error", error="judge down"), {})
    assert (errored.summary, errored.message) == ("judge down", "judge down")


def test_a_case_is_named_by_category_id_model_and_timed() -> None:
    case = junit_case(_record(generation_s=1.5, judge_s=0.25), {})
    assert (case.classname, case.name, case.seconds) == ("tempviz.Maps", "Maps-0[m]", 1.75)
    assert case.properties == ()
    with_properties = junit_case(_record(), {}, case_properties=True)
    assert ("tempviz.q1", "yes") in with_properties.properties


def test_one_suite_per_run_in_category_and_index_order(tmp_path: Path) -> None:
    records = [_record("10"), _record("2"), _record("1", "Animals"),
               _record("0", model="other", status="error", error="boom"),
               _record("3", status="failed")]
    path = tmp_path / "junit.xml"
    write_junit(path, records, {"Maps-3[m]": "q2: no"})
    assert_valid_junit(path)
    root = ET.parse(path).getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"tempviz[m|judge-simple]", "tempviz[other|judge-simple]"}
    mine = suites["tempviz[m|judge-simple]"]
    assert [c.get("name") for c in mine.iter("testcase")] == [
        "Animals-1[m]", "Maps-2[m]", "Maps-3[m]", "Maps-10[m]"]
    assert (mine.get("tests"), mine.get("failures"), mine.get("errors")) == ("4", "1", "0")
    other = suites["tempviz[other|judge-simple]"]
    assert (other.get("tests"), other.get("errors")) == ("1", "1")
    error = other.find("testcase/error")
    assert error is not None and error.get("message") == "boom"
