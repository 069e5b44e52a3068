"""The TempViz suite end to end: tables, collection, generation, both judge styles with the
real openai client against the local server, reports, xdist, and agreement with people."""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from PIL import Image

from pytest_imagetime.backends.openai_client import InvalidAnswer
from pytest_imagetime.cli import main
from pytest_imagetime.judges.base import JudgeOptions
from pytest_imagetime.tempviz.examples import ExamplesError, load_examples
from pytest_imagetime.tempviz.judge import TempvizJudge, parse_instructed, parse_simple
from pytest_imagetime.tempviz.names import CATEGORIES
from pytest_imagetime.tempviz.prompts import TempvizDataError, load_table
from pytest_imagetime.tempviz.report import validate_report
from tests.fake_openai import ChatServer, ServerState, chat_server
from tests.junit_schema import assert_valid_junit
from tests.tempviz_data import HEADERS, TOTAL, write_tables

KEY = "sk-tempviz-test-KEY-0a1b2c3d"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "tempviz"
JUDGE_DIR = "judge-x-simple-0shot"
Rule = Callable[[str, str], str]  # (question, text asked) -> "yes" / "no" / anything


def asked(request: dict[str, Any]) -> tuple[str, str]:
    """Which question the last user turn asks, and its text."""
    text = next(p["text"] for p in request["messages"][-1]["content"] if p["type"] == "text")
    criterion = re.search(r"^Criterion \((Q\d)", text, re.M)
    if criterion:
        return criterion.group(1).lower(), text
    if "subject present" in text:
        return "q2", text
    return ("q1" if "generation errors" in text else "q3"), text


def usual(question: str, text: str) -> str:
    """Everything right except the time of two prompts."""
    wrong = question == "q3" and ("1939" in text or "24 years old" in text)
    return "no" if wrong else "yes"


def responder(rule: Rule = usual) -> Callable[[dict[str, Any]], str]:
    def answer(request: dict[str, Any]) -> str:
        question, text = asked(request)
        verdict = rule(question, text)
        if request["messages"][0]["role"] != "system":  # the simple style
            return {"yes": "Yes.", "no": "no"}.get(verdict, verdict)
        rating = {"yes": "Accept", "no": "Not accept"}.get(verdict, verdict)
        return f"Analysis: checked {question} against the rubric.\n**Rating:** {rating}"

    return answer


@pytest.fixture
def server(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    with chat_server(ServerState(responder=responder())) as running:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", running.base_url)
        yield running


def _args(*extra: str, data: str = "tv") -> list[str]:
    return ["--imagetime-suite=tempviz", f"--imagetime-tempviz-data={data}",
            "--imagetime-model=procedural", "--imagetime-size=64",
            "--imagetime-judge-model=judge-x", "--imagetime-judge-price=2,8",
            "--imagetime-judge-retries=1", "--imagetime-judge-reasks=1", "--strict-markers",
            *extra]


def _report(out: Path, judge: str = JUDGE_DIR, model: str = "procedural") -> dict[str, Any]:
    report: dict[str, Any] = json.loads((out / model / "tempviz" / judge / "report.json")
                                        .read_text())
    validate_report(report)
    return report


def _answers(report: dict[str, Any]) -> dict[str, tuple[str, Any, Any]]:
    return {i["id"]: (i["status"], i["answers"], i["error"]) for i in report["items"]}


# ---------------------------------------------------------------- tables and collection


MARKS_CONFTEST = """
def pytest_collection_modifyitems(items):
    for item in items:
        marks = sorted(m.name for m in item.iter_markers())
        print("MARKS", item.nodeid, " ".join(marks))
"""


def test_every_row_is_one_item_per_model_with_its_markers(pytester: pytest.Pytester) -> None:
    write_tables(pytester.path / "tv")
    pytester.makeconftest(MARKS_CONFTEST)
    args = _args("--imagetime-model=procedural:copied", "--imagetime-judge-key-env=none",
                 "--collect-only", "-q", "-s")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"*{2 * TOTAL} tests collected*"])
    marks = dict(line.split(" ", 2)[1:] for line in result.stdout.lines
                 if line.startswith("MARKS "))
    assert len(marks) == 2 * TOTAL
    assert marks["tv/Animals.csv::Animals-1[procedural]"] == \
        "tempviz tempviz_animals tempviz_difficulty_2 tempviz_unrealistic_age"
    assert marks["tv/Maps.csv::Maps-1[procedural:copied]"] == \
        "tempviz tempviz_difficulty_1 tempviz_maps"
    # Selection by marker holds under --strict-markers, for a prompt category the release
    # does not have too; so does a shard of the prompts.
    table = pytester.path / "tv" / "Landscapes.csv"
    table.write_text(table.read_text().replace("Daytime,Daytime", "Night time,Daytime"))
    selected = pytester.runpytest(*args, "-m", "tempviz_buildings or tempviz_night_time",
                                  "--imagetime-shard=1/2")
    selected.stdout.fnmatch_lines([f"4/{2 * TOTAL} tests collected*"])


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"the TempViz release is not at {SHARED} "
                    "(CI checks it out beside the repository)")
def test_the_release_collects_all_7940_prompts(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*_args("--imagetime-judge-key-env=none", "--collect-only",
                                       "-q", "-m", "tempviz_animals", data=str(SHARED)))
    result.stdout.fnmatch_lines(["2848/7940 tests collected*"])


def test_questions_come_from_the_right_columns(tmp_path: Path) -> None:
    (prompt, *_) = load_table(write_tables(tmp_path, ["Buildings"]) / "Buildings.csv")
    assert prompt.id == "Buildings-0" and prompt.difficulty == "2"
    assert prompt.questions["q2"].startswith("Is the following subject present")
    assert prompt.questions["q1"].startswith("Is the image without any visual generation")
    assert "temporal knowledge" in prompt.questions["q3"]
    assert prompt.facts == (("demolition date", "01/01/2009"), ("state today", "demolished"))
    assert prompt.markers() == ("tempviz", "tempviz_buildings", "tempviz_random_before",
                                "tempviz_difficulty_2")
    (landscape, _) = load_table(write_tables(tmp_path, ["Landscapes"]) / "Landscapes.csv")
    assert landscape.expected == ("frosty", "snowy")  # the table's repeats, once each


def _broken(path: Path, category: str, edit: Callable[[list[list[str]]], None]) -> Path:
    with open(path / f"{category}.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    edit(rows)
    with open(path / f"{category}.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    return path / f"{category}.csv"


def test_broken_tables_name_file_line_and_columns(tmp_path: Path) -> None:
    data = write_tables(tmp_path)
    prompt_at = HEADERS["Animals"].index("prompt")

    def no_prompt_column(rows: list[list[str]]) -> None:
        for row in rows:
            del row[prompt_at]

    with pytest.raises(TempvizDataError) as missing:
        load_table(_broken(data, "Animals", no_prompt_column), display="Animals.csv")
    assert str(missing.value).startswith("Animals.csv:1: missing column 'prompt' (columns "
                                         "found: index, subject, lifespan,")

    def empty_and_twice(rows: list[list[str]]) -> None:
        rows[2][HEADERS["Maps"].index("prompt")] = "  "
        rows.append(list(rows[1]))

    with pytest.raises(TempvizDataError) as bad:
        load_table(_broken(data, "Maps", empty_and_twice), display="Maps.csv")
    assert bad.value.problems == ("Maps.csv:3: index 1: empty 'prompt'",
                                  "Maps.csv:4: index 0 again (first on line 2)")


def test_bad_setups_stop_before_anything_runs(pytester: pytest.Pytester) -> None:
    cases = [
        (["--imagetime-suite=tempviz", "--imagetime-model=procedural"],
         "*--imagetime-suite=tempviz needs the prompt tables: --imagetime-tempviz-data=DIR*"),
        (_args(data="nowhere"), "*--imagetime-tempviz-data=nowhere: */nowhere is not a "
                                "directory*"),
        (_args(data="."), "*no TempViz table in *: expected one or more of Animals.csv, "
                          "Artworks.csv, Buildings.csv, Landscapes.csv, Maps.csv*"),
        (_args("--imagetime-tempviz-style=fancy"),
         "*--imagetime-tempviz-style=fancy: use simple or instructed*"),
        (_args("--imagetime-judge=pixel"), "*--imagetime-judge=pixel: the TempViz suite asks "
                                           "its questions with a vision-language model*"),
        (_args("--imagetime-grid=4x2"), "*--imagetime-grid belong to the ImageTime suite*"),
        (["--imagetime-suite=tempviz", "--imagetime-tempviz-data=tv"],
         "*give the image model(s) to test with --imagetime-model*"),
    ]
    write_tables(pytester.path / "tv", ["Maps"])
    for args, message in cases:
        result = pytester.runpytest(*args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, args
        result.stderr.fnmatch_lines([message])
    broken = pytester.path / "tv" / "Maps.csv"
    broken.write_text(broken.read_text().replace("Create a realistic map of europe in 1939",
                                                 ""), encoding="utf-8")
    result = pytester.runpytest(*_args("--imagetime-judge-key-env=none"))
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*tv/Maps.csv:3: index 1: empty 'prompt'*"])


# ---------------------------------------------------------------- judge answers


def test_answers_are_parsed_strictly() -> None:
    assert parse_simple(" Yes.\n") == ("yes", None)
    assert parse_simple("'no'") == ("no", None)
    for reply in ("Yes, the forest is there.", "maybe", ""):
        with pytest.raises(InvalidAnswer, match="expected 'yes' or 'no'"):
            parse_simple(reply)
    assert parse_instructed("Analysis: snow on the trees.\n**Rating:** Not accept.") == \
        ("no", "snow on the trees.")
    assert parse_instructed("ANALYSIS: fine\nRating: accept")[0] == "yes"
    with pytest.raises(InvalidAnswer, match="found 2"):
        parse_instructed("Analysis: x\nRating: Accept\nRating: Not accept")
    with pytest.raises(InvalidAnswer, match="found no"):
        parse_instructed("Analysis: x\nRating: Good")
    with pytest.raises(InvalidAnswer, match="an analysis before the rating"):
        parse_instructed("Rating: Accept")


def _examples(folder: Path, rows: list[dict[str, str]]) -> Path:
    colours = iter([(200, 30, 30), (30, 30, 200), (30, 200, 30)])
    for row in rows:
        Image.new("RGB", (16, 16), next(colours)).save(folder / row["image"])
    path = folder / "examples.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


EXAMPLE_ROWS = [
    {"image": "standing.png", "category": "Buildings", "index": "3", "question": "q3",
     "answer": "no", "analysis": "The memorial still stands, though it was demolished."},
    {"image": "present.png", "category": "Buildings", "index": "0", "question": "q2",
     "answer": "yes", "analysis": "The memorial is in the middle of the image."},
]


def test_k_shot_examples_are_earlier_turns_with_their_images(tmp_path: Path) -> None:
    data = write_tables(tmp_path / "tv", ["Buildings"])
    examples = load_examples(_examples(tmp_path, EXAMPLE_ROWS), data, "simple")
    judge = TempvizJudge(JudgeOptions(model="judge-x", key_env=None, base_url="http://x/v1"),
                         "simple", examples)
    assert judge.name == "judge-x-simple-1shot" and examples.k == 1
    after = load_table(data / "Buildings.csv")[1]
    messages = judge.messages(after, "q3", "data:image/png;base64,AAAA")
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    example_turn = messages[0]["content"]
    assert example_turn[0]["text"] == after.questions["q3"]
    assert example_turn[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert messages[1]["content"] == "no"
    assert [m["role"] for m in judge.messages(after, "q1", "data:x")] == ["user"]


def test_bad_examples_are_refused_with_their_line(tmp_path: Path) -> None:
    data = write_tables(tmp_path / "tv", ["Buildings"])
    rows = [dict(EXAMPLE_ROWS[0], question="q4")]
    with pytest.raises(ExamplesError, match=r"examples.csv:2: question 'q4': use q1, q2 or q3"):
        load_examples(_examples(tmp_path, rows), data, "simple")
    rows = [dict(EXAMPLE_ROWS[0], index="99")]
    with pytest.raises(ExamplesError, match=r"examples.csv:2: no row with index '99' in"):
        load_examples(_examples(tmp_path, rows), data, "simple")
    rows = [{k: v for k, v in EXAMPLE_ROWS[0].items() if k != "analysis"}]
    with pytest.raises(ExamplesError, match=r"no column 'analysis' \(the instructed style"):
        load_examples(_examples(tmp_path, rows), data, "instructed")


# ---------------------------------------------------------------- runs


def test_simple_run_reports_resumes_and_agrees_with_people(pytester: pytest.Pytester,
                                                           server: ChatServer,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    write_tables(pytester.path / "tv")
    result = pytester.runpytest(*_args("--imagetime-html=html", "--junitxml=pytest.xml"))
    result.assert_outcomes(passed=TOTAL - 2, failed=2)
    result.stdout.fnmatch_lines([
        "*Maps-1 [[]procedural[]]: not every answer is yes",
        "*Q3 the temporal cue is applied correctly: no",
        "procedural | judge-x-simple-0shot: 11 items, 81.8% pass, 0 errors, judge cost*",
        "  Maps * 100.0% * 100.0% * 50.0% * 50.0%"])
    assert len(server.state.requests) == 3 * TOTAL
    out = pytester.path / "reports"
    report = _report(out)
    summary = report["summary"]
    assert (summary["n"], summary["passed"], summary["failed"], summary["errors"]) == \
        (TOTAL, TOTAL - 2, 2, 0)
    assert summary["accuracy"] == {"q1": 1.0, "q2": 1.0, "q3": round(9 / 11, 6),
                                   "q2_and_q3": round(9 / 11, 6)}
    assert summary["cost_usd"] == pytest.approx(3 * TOTAL * (1500 * 2 + 500 * 8) / 1e6)
    assert report["by_prompt_category"]["Animals"]["unrealistic age"]["pass_rate"] == 0.0
    assert report["by_difficulty"]["1"]["n"] == 7
    assert _answers(report)["Animals-1"] == ("failed", {"q1": "yes", "q2": "yes", "q3": "no"},
                                             None)
    # answers.csv and the JUnit files
    run_dir = out / "procedural" / "tempviz" / JUDGE_DIR
    with open(run_dir / "answers.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["id"], r["q3"], r["q2_and_q3"]) for r in rows[:2]] == \
        [("Animals-0", "yes", "yes"), ("Animals-1", "no", "no")]
    # pytest's --junitxml is the one JUnit file: valid, the answers in each case's system-out
    assert not (out / "tempviz-junit.xml").exists()
    junit = assert_valid_junit(pytester.path / "pytest.xml")
    (suite,) = junit.iter("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("11", "2", "0")
    outputs = {c.get("name"): c.findtext("system-out", "") for c in junit.iter("testcase")}
    assert outputs["Maps-1[procedural]"].startswith(
        "Maps-1[procedural]: failed\nanswers: q1=yes q2=yes q3=no\n")
    assert outputs["Maps-1[procedural]"].endswith(
        "\n[[ATTACHMENT|reports/procedural/tempviz/images/Maps-1.png]]")
    # without --junitxml, the suite's own file; per-case properties only under xunit1
    xunit1 = pytester.runpytest(*_args("-o", "junit_family=xunit1"))
    xunit1.assert_outcomes(passed=TOTAL - 2, failed=2)
    own = ET.parse(out / "tempviz-junit.xml").getroot()
    assert (own.get("tests"), own.get("failures"), own.get("errors")) == ("11", "2", "0")
    props = {p.get("name"): p.get("value") for p in own.iter("property")}
    assert "tempviz.q3" in props and "tempviz.image_sha256" in props
    pytester.runpytest(*_args()).assert_outcomes(passed=TOTAL - 2, failed=2)
    own = assert_valid_junit(out / "tempviz-junit.xml")
    assert not list(own.iter("property"))
    # the HTML page: the paper's figure 2 and thumbnails
    page = (pytester.path / "html" / "index.html").read_text()
    assert '<table class="fig">' in page and "Q2 and Q3 (subject present, time right)" in page
    assert (pytester.path / "html" / "media" / "procedural" / "Maps-1.jpg").is_file()
    # a second run draws nothing and asks nothing; a dry run says so
    image = run_dir.parent / "images" / "Maps-1.png"
    drawn_at = image.stat().st_mtime_ns
    pytester.runpytest(*_args()).assert_outcomes(passed=TOTAL - 2, failed=2)
    assert len(server.state.requests) == 3 * TOTAL
    assert image.stat().st_mtime_ns == drawn_at
    again = _report(out)
    assert not any(i["generated"] or i["judged"] for i in again["items"])
    assert again["summary"]["spent_usd"] == 0 and _answers(again) == _answers(report)
    dry = pytester.runpytest(*_args("--imagetime-dry-run"))
    dry.stdout.fnmatch_lines([f"{TOTAL} items: {TOTAL} answered and stored, 0 to draw or "
                              "judge (0 judge calls, judge judge-x, simple, 0-shot)"])
    # people's labels in the TempViz format (yes/no per question) against the judge
    human = pytester.path / "human.csv"
    human.write_text("category,index,q1,q2,q3\nAnimals,0,yes,yes,yes\nAnimals,1,yes,yes,yes\n"
                     "Maps,0,yes,yes,no\nMaps,1,no,yes,no\n")
    capsys.readouterr()
    assert main(["agree", str(human), str(run_dir / "answers.csv"), "--on", "category,index",
                 "--label", "q3", "--json"]) == 0
    agreement = json.loads(capsys.readouterr().out)
    assert agreement["type"] == "categorical"
    assert agreement["overall"]["n"] == 4 and agreement["overall"]["accuracy"] == 50.0
    assert agreement["unmatched_b"]["count"] == TOTAL - 4


def test_instructed_style_shows_rubric_examples_and_analyses(pytester: pytest.Pytester,
                                                             server: ChatServer) -> None:
    data = write_tables(pytester.path / "tv", ["Buildings"])
    examples = _examples(pytester.path, EXAMPLE_ROWS)
    server.state.responder = responder(
        lambda q, text: "no" if q == "q3" and "after 01/01/2009'" in text.split("\n")[0]
        else "yes")
    result = pytester.runpytest(*_args("--imagetime-tempviz-style=instructed",
                                       f"--imagetime-tempviz-examples={examples}",
                                       data=str(data)))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*Q3 the temporal cue is applied correctly: no (checked q3 "
                                 "against the rubric.)"])
    report = _report(pytester.path / "reports", judge="judge-x-instructed-1shot")
    assert report["manifest"]["judge"]["style"] == "instructed"
    assert report["manifest"]["examples"]["counts"] == {"Buildings": {"q1": 0, "q2": 1,
                                                                      "q3": 1}}
    q3 = [r for r in server.state.requests if asked(r)[0] == "q3"]
    assert len(q3) == 2 and len(server.state.requests) == 6
    messages = q3[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "Rating: Not accept" in messages[0]["content"]
    assert messages[2]["content"] == ("Analysis: The memorial still stands, though it was "
                                      "demolished.\nRating: Not accept")
    assert messages[1]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
    text = messages[3]["content"][0]["text"]
    assert "Rubric: Accept when the building is shown as it was on the date" in text
    assert "- demolition date: 01/01/2009" in text
    assert "- what the image should show after the demolition: ruined, rubble" in text
    assert "Just reply" not in text
    judgment = json.loads(Path(report["items"][1]["judgment"]).read_text())
    assert judgment["answers"]["q3"]["analysis"] == "checked q3 against the rubric."


def test_model_and_judge_failures_are_errors_with_their_reason(
        pytester: pytest.Pytester, server: ChatServer) -> None:
    write_tables(pytester.path / "tv", ["Maps"])
    pictures = pytester.mkdir("pictures")
    Image.new("RGB", (64, 64), (10, 120, 200)).save(pictures / "Maps-0.png")
    server.state.fault_queue = ["500", "500"]  # the first question, and its one retry
    server.state.responder = responder(lambda q, text: "maybe" if q == "q3" and "1939" in text
                                       else "yes")
    result = pytester.runpytest(*_args("--imagetime-model=files:pictures",
                                       "--imagetime-judge-concurrency=1"))
    result.assert_outcomes(passed=1, errors=3)
    result.stdout.fnmatch_lines([
        "*Maps-0[[]procedural[]]: judge judge-x failed on Maps-0: Q1 (no visible generation "
        "errors): HTTP 500 from the endpoint after 1 retry*",
        "*Maps-1[[]procedural[]]: judge judge-x failed on Maps-1: Q3 (the temporal cue is "
        "applied correctly): no valid answer after 2 attempts: expected 'yes' or 'no', got "
        "'maybe' | *",
        "*Maps-1[[]files:pictures[]]: model files:pictures failed on Maps-1: no image for "
        "case 'Maps-1'*"])
    out = pytester.path / "reports"
    procedural = _report(out)
    assert procedural["summary"]["errors"] == 2 and procedural["summary"]["answered"] == 0
    assert procedural["summary"]["accuracy"]["q3"] is None
    assert [i["answers"]["q3"] for i in procedural["items"]] == [None, None]
    files = _report(out, model="files-pictures")
    assert [i["status"] for i in files["items"]] == ["passed", "error"]
    assert KEY not in (out / "tempviz-junit.xml").read_text()


def test_xdist_gives_the_same_report(pytester: pytest.Pytester, server: ChatServer) -> None:
    write_tables(pytester.path / "tv", ["Animals", "Maps"])
    pytester.runpytest(*_args("--imagetime-out=serial")).assert_outcomes(passed=3, failed=2)
    parallel = pytester.runpytest(*_args("--imagetime-out=parallel", "-n", "2"))
    parallel.assert_outcomes(passed=3, failed=2)
    serial, spread = _report(pytester.path / "serial"), _report(pytester.path / "parallel")
    assert _answers(serial) == _answers(spread)
    assert serial["summary"] == spread["summary"]
    assert serial["by_category"] == spread["by_category"]


def test_the_schema_refuses_a_pass_with_a_no(tmp_path: Path) -> None:
    from pytest_imagetime.tempviz.record import TempvizRecord
    from pytest_imagetime.tempviz.report import build_report

    record = TempvizRecord(key="Maps-0[m]", id="Maps-0", category="Maps", index="0",
                           promptcategory="maps", difficulty="1", prompt="a map", model="m",
                           judge="j", run_dir=str(tmp_path), status="passed", q1="yes",
                           q2="yes", q3="no")
    manifest = {"suite": "tempviz", "model": {"spec": "m", "config": {}},
                "judge": {"name": "j", "style": "simple", "shots": 0, "config": {}},
                "size": 64, "seed": 0, "data_dir": "tv", "run_dir": str(tmp_path),
                "questions": {"q1": "a", "q2": "b", "q3": "c"}, "examples": None,
                "shard": None}
    report = build_report(manifest, [record], "2025-01-01T00:00:00+00:00")
    with pytest.raises(jsonschema.ValidationError):
        validate_report(report)
    validate_report(build_report(manifest, [record.with_status("failed")], "now"))
    assert set(report["by_category"]) <= set(CATEGORIES)
