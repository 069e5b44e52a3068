"""The order probe's free-text aspects (TimeCausality's Reasoning and Inferring): questions and
ground truth from a case, reading a rating, the scores' arithmetic against a published row,
and whole probes with the real openai client against the local server, whose answers and
ratings are scripted here."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.backends.openai_client import InvalidAnswer
from pytest_imagetime.cases.loading import load_case_file
from pytest_imagetime.cases.model import Case
from pytest_imagetime.cli import main
from pytest_imagetime.models.base import GenerationRequest
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.research.probe.causality import (
    RATING_PROMPT,
    ground_truth,
    question,
    rating_prompt,
    read_rating,
    source_object,
)
from pytest_imagetime.research.probe.commands import add_parser
from pytest_imagetime.research.probe.images import pair_boxes, panels
from pytest_imagetime.research.probe.order import (
    Outcome,
    ProbedRun,
    ProbeSettings,
    probe_image,
    text_probes,
)
from pytest_imagetime.research.probe.order_report import build_report, metrics, validate_report
from pytest_imagetime.store.paths import RunPaths
from pytest_imagetime.store.sheets import store_image
from tests.builders import case_dict, make_case, write_case_file
from tests.fake_openai import ChatServer, ServerState, chat_server

REASONING_T1_T4 = (
    "First (t1): The cook holds the full jug above the empty glass. Later (t4): The glass is "
    "full and the jug is upright. What changes: the glass is empty becomes the glass is full. "
    "Why this order: the water level never decreases.")
INFERRING = ("The action pour water, by a cook in a red apron, with a glass jug, on an empty "
             "clear glass. It begins: The jug tilts and the first drops fall.")

# ---------------------------------------------------------------- questions and ground truth


@pytest.fixture
def case(tmp_path: Path) -> Case:
    (loaded,) = load_case_file(write_case_file(tmp_path / "k.yaml", [case_dict()]))
    return loaded


def test_the_papers_questions_name_the_cases_target(case: Case) -> None:
    assert source_object(case) == "empty clear glass"
    assert question("reasoning", case) == (
        "Why does the empty clear glass in the scene on the top occur after the one on the "
        "bottom? Answer in one sentence.")
    assert question("inferring", case) == (
        "What caused the transition from the empty clear glass on the bottom to the empty "
        "clear glass on the top? Answer in one sentence.")
    bowl = make_case()
    object.__setattr__(bowl, "entities", {"targets": ("one white bowl of rice, heaped",)})
    assert source_object(bowl) == "white bowl of rice"
    object.__setattr__(bowl, "entities", {"actors": ("The dog",)})
    assert source_object(bowl) == "dog"
    object.__setattr__(bowl, "entities", {})
    assert source_object(bowl) == "scene"


def test_ground_truth_from_states_predicates_constraints_and_action(case: Case) -> None:
    assert ground_truth("reasoning", case, "t1", "t4") == REASONING_T1_T4
    assert ground_truth("reasoning", case, "t2", "t3") == (
        "First (t2): The jug tilts and the first drops fall. Later (t3): The glass is half "
        "full. What changes: the jug is tilted over the glass becomes the glass is about half "
        "full. Why this order: the water level never decreases.")
    # The cause is the case's action and its onset, the same for both pairs.
    assert ground_truth("inferring", case, "t1", "t4") == INFERRING
    assert ground_truth("inferring", case, "t2", "t3") == INFERRING


def test_free_text_probes_show_the_later_panel_on_top() -> None:
    probes = text_probes(("order", "reasoning", "inferring"))
    assert [(p.name, p.stages, p.kind) for p in probes] == [
        ("t1-t4:reasoning", (3, 0), "reasoning"), ("t1-t4:inferring", (3, 0), "inferring"),
        ("t2-t3:reasoning", (2, 1), "reasoning"), ("t2-t3:inferring", (2, 1), "inferring")]
    assert [p.name for p in text_probes(("inferring",))] == ["t1-t4:inferring",
                                                             "t2-t3:inferring"]
    sheet = ProceduralModel().generate(
        request=GenerationRequest(make_case(), "prompt-only", 256, 1)).image
    image = probe_image(sheet, probes[0], 0.0)
    top, bottom = pair_boxes(image.size)
    cut = panels(sheet)
    assert image.crop(top.as_tuple()).tobytes() == cut[3].tobytes()
    assert image.crop(bottom.as_tuple()).tobytes() == cut[0].tobytes()


@pytest.mark.parametrize(("content", "rating"), [
    ("Feedback::: close in meaning.\nTotal rating: 4", 4),
    ("3", 3),
    ("Total rating: 5.0", 5),
    ("Feedback:::\nTotal rating: (your rating, as an integer between 0 and 5)\n"
     "Total rating: 2", 2),  # the format line echoed: the last rating counts
    ("total rating: 0 - unrelated", 0),
])
def test_a_rating_is_read_after_total_rating(content: str, rating: int) -> None:
    assert read_rating(content) == rating


@pytest.mark.parametrize(("content", "problem"), [
    ("I cannot rate this.", "no rating in the answer"),
    ("Total rating: 7", "the rating 7 is not an integer from 0 to 5"),
    ("Total rating: 3.5", "the rating 3.5 is not an integer from 0 to 5"),
    ("Total rating: -1", "the rating -1 is not an integer from 0 to 5"),
])
def test_an_unreadable_rating_is_invalid_never_zero(content: str, problem: str) -> None:
    with pytest.raises(InvalidAnswer, match=problem):
        read_rating(content)


def test_the_rating_prompt_is_the_papers() -> None:
    prompt = rating_prompt("GT", "OUT")
    assert prompt.endswith("Ground Truth: GT\nModel Output: OUT\n\nFeedback:::\nTotal rating: ")
    assert "an integer on a scale of 0 to 5" in RATING_PROMPT


# ---------------------------------------------------------------- a published row's arithmetic

# TimeCausality Table 2 (GPT-4o): per type, pairs and the R- and I-score; Table 1 pools them
# into 2.45 and 2.80. Integer ratings whose sums give those per-type means (to 2 decimals).
GPT4O = {"CC": (48, 137, 136, 2.85, 2.83), "EM": (132, 403, 510, 3.05, 3.86),
         "AP": (8, 12, 20, 1.50, 2.50), "NP": (117, 163, 168, 1.39, 1.44),
         "PC": (45, 143, 146, 3.18, 3.24)}


def _ratings(count: int, total: int) -> list[int]:
    base, extra = divmod(total, count)
    return [base + 1] * extra + [base] * (count - extra)


def test_scores_pool_per_type_means_as_the_published_gpt4o_row(tmp_path: Path) -> None:
    outcomes = []
    for domain, (pairs, r_sum, i_sum, _, _) in GPT4O.items():
        for aspect, total in (("reasoning", r_sum), ("inferring", i_sum)):
            (probe,) = text_probes((aspect,))[:1]
            for i, rating in enumerate(_ratings(pairs, total)):
                outcomes.append(Outcome("run", "gpt-4o", f"{domain}-{i}", domain, probe,
                                        answer="because", rating=rating, truth="gt"))
    # A failed rating is left out, never counted as 0.
    outcomes.append(Outcome("run", "gpt-4o", "CC-x", "CC", text_probes(("reasoning",))[0],
                            answer="because", error="rating: no usable answer"))
    for domain, (pairs, _, _, r_score, i_score) in GPT4O.items():
        m = metrics([o for o in outcomes if o.domain == domain])
        assert (m["reasoning_rated"], m["inferring_rated"]) == (pairs, pairs)
        assert (round(m["reasoning"], 2), round(m["inferring"], 2)) == (r_score, i_score)
    overall = metrics(outcomes)
    assert (overall["reasoning_rated"], overall["errors"]) == (350, 1)
    # Table 1: the sample-weighted mean of the per-type scores.
    weighted = sum(v[0] * v[3] for v in GPT4O.values()) / 350
    assert round(weighted, 2) == round(overall["reasoning"], 2) == 2.45
    assert round(overall["inferring"], 2) == 2.80
    run = ProbedRun(tmp_path / "gpt-4o", "gpt-4o", ())
    report = build_report([run], outcomes, ProbeSettings("m", aspects=("reasoning",
                                                                       "inferring")),
                          {"model": "m"}, "now", rater={"model": "r"})
    validate_report(report)
    assert report["overall"]["acc"] is None and report["overall"]["reasoning"] is not None


# ---------------------------------------------------------------- whole probes


def _user_text(request: dict[str, Any]) -> str:
    content = request["messages"][0]["content"]
    return "".join(p["text"] for p in content if p["type"] == "text")


def _is_rating(request: dict[str, Any]) -> bool:
    return _user_text(request).startswith("\nYou will be given a ground truth")


def scripted_rating(prompt: str) -> str:
    """Reasoning: 5 for the t1/t4 pair, 2 for t2/t3, 1 in the garden; inferring: 3."""
    truth = prompt.split("Ground Truth: ")[1].split("\nModel Output: ")[0]
    if truth.startswith("The action"):
        return "Feedback::: the cause is named.\nTotal rating: 3"
    if "soil" in truth:
        return "Feedback::: unrelated.\nTotal rating: 1"
    return f"Feedback::: fine.\nTotal rating: {5 if truth.startswith('First (t1)') else 2}"


def scripted(request: dict[str, Any]) -> str:
    if "response_format" in request:  # the order probes
        if request["response_format"]["json_schema"]["name"] == "order_probe_pair":
            return json.dumps({"first": "A"})
        return json.dumps({"order": ["1", "2", "3", "4"]})
    if _is_rating(request):
        return scripted_rating(_user_text(request))
    if _user_text(request).startswith("Why"):
        return "The glass fills with water over time."
    return "The cook pours water from the jug."


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState(responder=scripted)) as running:
        yield running


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """Procedural sheets of two kitchen cases and one garden case."""
    kitchen = write_case_file(tmp_path / "kitchen.yaml", [
        case_dict(), case_dict("kitchen-pour-water-2", variant=2)])
    garden = write_case_file(tmp_path / "garden.yaml", [
        case_dict("garden-water-1", temporal_constraints=["the soil only gets wetter"])],
        domain="Garden")
    model = ProceduralModel()
    paths = RunPaths(tmp_path / "reports", model.name, "pixel", "prompt-only")
    for i, case in enumerate([*load_case_file(kitchen), *load_case_file(garden)]):
        image = model.generate(request=GenerationRequest(case, "prompt-only", 256, i)).image
        store_image(paths, case.id, image, {"model": model.name, "setting": "prompt-only",
                                            "case_id": case.id})
    return tmp_path


def _probe(stored: Path, server: ChatServer) -> Callable[..., int]:
    def run(*more: str) -> int:
        return main(["probe-order", str(stored / "reports"), "--cases", str(stored),
                     "--base-url", server.base_url, "--key-env", "none",
                     "--concurrency", "4", "--out", str(stored / "probe.json"), *more])
    return run


def _report(stored: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((stored / "probe.json").read_text())
    validate_report(report)
    return report


def test_reasoning_and_inferring_are_asked_rated_and_scored(
        stored: Path, server: ChatServer, capsys: pytest.CaptureFixture[str]) -> None:
    probe = _probe(stored, server)
    # An always-top judge of the reference sheets is unfit: exit status 1.
    assert probe("--aspects", "order,reasoning,inferring", "--rater-model", "fake-rater") == 1
    report = _report(stored)
    (run,) = report["runs"]
    m = run["metrics"]
    assert (m["probes"], m["errors"], m["reasoning_rated"], m["inferring_rated"]) == (27, 0, 6,
                                                                                       6)
    # Kitchen (2 sheets): (5 + 2) / 2 each; garden: 1; pooled over the 6 rated answers.
    assert run["by_domain"]["Kitchen"]["reasoning"] == 3.5
    assert run["by_domain"]["Garden"]["reasoning"] == 1.0
    assert m["reasoning"] == pytest.approx((3.5 * 4 + 1.0 * 2) / 6, abs=1e-4)
    assert (m["inferring"], report["overall"]["inferring"]) == (3.0, 3.0)
    # The order aspect is scored as before, beside them (an always-top judge).
    assert (m["acc"], m["acc_r"], m["group"]) == (100.0, 0.0, 0.0)
    assert report["rater"]["model"] == "fake-rater"
    assert report["settings"]["aspects"] == ["order", "reasoning", "inferring"]
    assert report["asked_by"] == {"judge": 27, "rater": 12}
    assert (report["asked"], report["cached"], len(server.state.requests)) == (39, 0, 39)
    texts = [r for r in server.state.requests if "response_format" not in r]
    answers = [r for r in texts if not _is_rating(r)]
    ratings = [r for r in texts if _is_rating(r)]
    assert {r["model"] for r in answers} == {"gpt-5.5"}
    assert {r["model"] for r in ratings} == {"fake-rater"}
    assert question("reasoning", make_case()) in {_user_text(r) for r in answers}
    assert all(any(p["type"] == "image_url" for p in r["messages"][0]["content"])
               for r in answers)
    assert rating_prompt(REASONING_T1_T4, "The glass fills with water over time.") in {
        _user_text(r) for r in ratings}
    out = capsys.readouterr().out
    assert "cost unknown (no price for fake-rater)" in out
    assert "reasoning and inferring on t1/t4 and t2/t3 (later on top), rated 0-5 by " \
           "fake-rater" in out
    header = next(line for line in out.splitlines() if line.startswith("run"))
    assert header.split()[-3:] == ["R", "I", "verdict"]
    # The answer and its rating are stored beside the order answers.
    stored_ratings = [json.loads(p.read_text()) for p in
                      (stored / "reports" / "procedural" / "probe-order").glob("*.json")]
    rated = [r for r in stored_ratings if r["format"] == "imagetime-order-probe-rating/1"]
    assert len(rated) == 12 and {r["rating"] for r in rated} == {1, 2, 3, 5}


def test_a_second_run_asks_nothing_and_another_rater_only_rates(
        stored: Path, server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _probe(stored, server)
    assert probe("--aspects", "reasoning,inferring") == 0
    first = _report(stored)
    assert first["asked_by"] == {"judge": 12, "rater": 12}
    assert first["rater"]["model"] == "gpt-5.5"  # the judge rates its own answers by default
    server.state.requests.clear()
    monkeypatch.setenv("NO_KEY_HERE", "")
    assert probe("--aspects", "reasoning,inferring", "--key-env", "NO_KEY_HERE") == 0
    second = _report(stored)
    assert server.state.requests == []
    assert (second["asked"], second["cached"]) == (0, 24)
    assert second["runs"] == first["runs"]
    # Another rater: the stored answers are rated again, nothing is asked of the judge.
    assert probe("--aspects", "reasoning,inferring", "--rater-model", "other-rater") == 0
    assert len(server.state.requests) == 12
    assert all(_is_rating(r) for r in server.state.requests)
    assert _report(stored)["cached_by"] == {"judge": 12, "rater": 0}


def test_a_failed_rating_is_an_error_with_its_reason_never_a_zero(
        stored: Path, server: ChatServer, capsys: pytest.CaptureFixture[str]) -> None:
    def unrated(request: dict[str, Any]) -> str:
        if _is_rating(request) and "The action" in _user_text(request):
            return "Feedback::: I cannot rate this."
        return scripted(request)

    server.state.responder = unrated
    probe = _probe(stored, server)
    assert probe("--aspects", "reasoning,inferring", "--reasks", "1") == 0
    report = _report(stored)
    (run,) = report["runs"]
    m = run["metrics"]
    assert (m["errors"], m["inferring_rated"], m["inferring"]) == (6, 0, None)
    assert (m["reasoning_rated"], m["reasoning"]) == (6, pytest.approx(16 / 6, abs=1e-4))
    reasons = {e["reason"] for e in run["errors"]}
    assert reasons == {"rating: no usable answer after 2 attempts: no rating in the answer: "
                       "'Feedback::: I cannot rate this.' | no rating in the answer: "
                       "'Feedback::: I cannot rate this.'"}
    assert {e["probe"] for e in run["errors"]} == {"t1-t4:inferring", "t2-t3:inferring"}
    assert "errors (6, not scored):" in capsys.readouterr().out
    # The next run asks only the missing ratings; the answers are stored.
    server.state.responder = scripted
    server.state.requests.clear()
    assert probe("--aspects", "reasoning,inferring") == 0
    assert len(server.state.requests) == 6 and all(map(_is_rating, server.state.requests))
    assert _report(stored)["runs"][0]["metrics"]["inferring"] == 3.0


def test_a_failed_answer_is_an_error_and_is_not_rated(stored: Path, server: ChatServer) -> None:
    server.state.fault_queue = ["500", "500", "500"]
    probe = _probe(stored, server)
    assert probe("--aspects", "reasoning", "--concurrency", "1", "--retries", "2",
                 "--sample", "1") == 0
    (run,) = _report(stored)["runs"]
    (error,) = run["errors"]
    assert error["probe"] == "t1-t4:reasoning"
    assert error["reason"].startswith("HTTP 500 from the endpoint after 2 retries")
    assert (run["metrics"]["reasoning_rated"], run["metrics"]["reasoning"]) == (1, 2.0)
    assert sum(map(_is_rating, server.state.requests)) == 1


def test_a_sheet_without_its_case_gets_no_free_text_probe(stored: Path,
                                                         server: ChatServer) -> None:
    only_garden = stored / "garden.yaml"
    assert main(["probe-order", str(stored / "reports"), "--cases", str(only_garden),
                 "--base-url", server.base_url, "--key-env", "none", "--aspects", "inferring",
                 "--out", str(stored / "probe.json")]) == 0
    (run,) = _report(stored)["runs"]
    assert (run["metrics"]["probes"], run["metrics"]["inferring_rated"]) == (2, 2)
    assert run["verdict"]["status"] == "unknown"


@pytest.mark.parametrize("value", ["", "order,why", "reasoning,,Order"])
def test_unknown_aspects_are_refused(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="imagetime")
    add_parser(parser.add_subparsers(dest="command"))
    with pytest.raises(SystemExit):
        parser.parse_args(["probe-order", "r", "--aspects", value])
    assert "give one or more of order, reasoning, inferring, separated by commas" in \
        capsys.readouterr().err
    args = parser.parse_args(["probe-order", "r", "--aspects", "inferring, order,inferring"])
    assert args.aspects == ("inferring", "order")
    assert parser.parse_args(["probe-order", "r"]).aspects == ("order",)
