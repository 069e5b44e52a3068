"""The order probe: metrics on known answers, probe images, and whole probes of stored runs
with the real openai client against the local server, answered by a judge that looks."""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from pytest_imagetime.cases.loading import load_case_file
from pytest_imagetime.cli import main
from pytest_imagetime.models.base import GenerationRequest
from pytest_imagetime.models.procedural import GROUND_Y, ProceduralModel
from pytest_imagetime.research.probe.images import grid_boxes, pair_boxes, pair_image, panels
from pytest_imagetime.research.probe.order import arrangement, probe_image, probes_for
from pytest_imagetime.research.probe.order_metrics import (
    OrderAnswer,
    PairAnswer,
    order_metrics,
    pair_metrics,
    ranks_from_labels,
)
from pytest_imagetime.research.probe.order_report import validate_report
from pytest_imagetime.sheet.geometry import Box
from pytest_imagetime.store.atomic import atomic_write_json
from pytest_imagetime.store.paths import RunPaths
from pytest_imagetime.store.sheets import store_image
from tests.builders import case_dict, write_case_file
from tests.fake_openai import ChatServer, ServerState, chat_server

GLASS = np.array((236, 242, 246))

# ---------------------------------------------------------------- fake judges


def _image(request: dict[str, Any]) -> Image.Image:
    url = next(p["image_url"]["url"] for m in request["messages"] if m["role"] == "user"
               for p in m["content"] if p["type"] == "image_url")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")


def _fill(image: Image.Image, box: Box) -> float:
    """How full the procedural vessel is in the panel at ``box``: it fills up with time."""
    pixels = np.asarray(image.crop(box.as_tuple()), dtype=float)
    h, w = pixels.shape[:2]
    region = pixels[int((GROUND_Y - 0.26) * h):int((GROUND_Y - 0.03) * h),
                    int(0.84 * w):int(0.92 * w)]
    return 1.0 - float((np.abs(region - GLASS).sum(axis=2) < 30).mean())


def sighted(request: dict[str, Any]) -> str:
    """Answers like a reader who sees the vessel fill: the fuller panel is the later one."""
    image = _image(request)
    if request["response_format"]["json_schema"]["name"] == "order_probe_pair":
        top, bottom = pair_boxes(image.size)
        return json.dumps({"first": "A" if _fill(image, top) < _fill(image, bottom) else "B"})
    fills = [_fill(image, box) for box in grid_boxes(image.size)]
    return json.dumps({"order": [str(i + 1) for i in np.argsort(fills, kind="stable")]})


def biased(request: dict[str, Any]) -> str:
    """Always the top picture, and the grid in reading order."""
    if request["response_format"]["json_schema"]["name"] == "order_probe_pair":
        return json.dumps({"first": "A"})
    return json.dumps({"order": ["1", "2", "3", "4"]})


# ---------------------------------------------------------------- metrics on known answers


def _pairs(spec: list[tuple[str, bool, str]]) -> list[PairAnswer]:
    return [PairAnswer(g, r, a) for g, r, a in spec]


def test_a_perfect_judge() -> None:
    answers = _pairs([("s1", False, "A"), ("s1", True, "B"), ("s2", False, "A"),
                      ("s2", True, "B")])
    assert pair_metrics(answers) == {"acc": 100.0, "acc_r": 100.0, "group": 100.0,
                                     "f1": 100.0, "position_bias": 0.0}


def test_an_always_top_judge() -> None:
    answers = _pairs([(f"s{i}", r, "A") for i in range(3) for r in (False, True)])
    m = pair_metrics(answers)
    assert (m["acc"], m["acc_r"], m["group"], m["position_bias"]) == (100.0, 0.0, 0.0, 0.5)
    # class A: precision 1/2, recall 1 -> F1 2/3; class B never predicted -> F1 0
    assert m["f1"] == pytest.approx(100 / 3)


def test_a_mixed_answer_set() -> None:
    answers = _pairs([("s1", False, "A"), ("s1", True, "B"),  # both right
                      ("s2", False, "A"), ("s2", True, "A"),  # forward only
                      ("s3", False, "B"), ("s3", True, "B"),  # reversed only
                      ("s4", False, "A")])  # reversed presentation failed: not a group
    m = pair_metrics(answers)
    assert m["acc"] == pytest.approx(75.0)
    assert m["acc_r"] == pytest.approx(200 / 3)
    assert m["group"] == pytest.approx(100 / 3)
    assert m["position_bias"] == pytest.approx(4 / 7 - 0.5)
    # A: tp 3, predicted 4, true 4 -> 3/4; B: tp 2, predicted 3, true 3 -> 2/3
    assert m["f1"] == pytest.approx(100 * (0.75 + 2 / 3) / 2)


def test_nothing_answered_is_undefined_not_zero() -> None:
    m = {**pair_metrics([]), **order_metrics([])}
    assert all(math.isnan(v) for v in m.values())


def test_order_metrics() -> None:
    answers = [OrderAnswer((0, 1, 2, 3)), OrderAnswer((3, 2, 1, 0)), OrderAnswer((1, 0, 2, 3))]
    m = order_metrics(answers)
    assert m["exact_order"] == pytest.approx(100 / 3)
    assert m["kendall_tau"] == pytest.approx((1 - 1 + 4 / 6) / 3)
    # cells show t3, t1, t4, t2; the judge lists labels 2, 4, 1, 3: exactly right
    assert ranks_from_labels(["2", "4", "1", "3"], (2, 0, 3, 1)) == (0, 1, 2, 3)
    assert ranks_from_labels(["1", "2", "3", "4"], (2, 0, 3, 1)) == (1, 3, 0, 2)


answer_sets = st.lists(st.tuples(st.integers(0, 5), st.booleans(), st.sampled_from("AB")),
                       max_size=24)


@given(answer_sets)
def test_metrics_stay_in_range(spec: list[tuple[int, bool, str]]) -> None:
    m = pair_metrics(_pairs([(str(g), r, a) for g, r, a in spec]))
    for key in ("acc", "acc_r", "group", "f1"):
        assert math.isnan(m[key]) or 0.0 <= m[key] <= 100.0
    assert math.isnan(m["position_bias"]) or -0.5 <= m["position_bias"] <= 0.5


@given(answer_sets)
def test_swapping_the_presentations_swaps_acc_and_flips_the_bias(
        spec: list[tuple[int, bool, str]]) -> None:
    swap = {"A": "B", "B": "A"}
    m = pair_metrics(_pairs([(str(g), r, a) for g, r, a in spec]))
    s = pair_metrics(_pairs([(str(g), not r, swap[a]) for g, r, a in spec]))

    def same(x: float, y: float) -> bool:
        return (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y)

    assert same(s["acc"], m["acc_r"]) and same(s["acc_r"], m["acc"])
    assert same(s["group"], m["group"]) and same(s["f1"], m["f1"])
    assert same(s["position_bias"], -m["position_bias"])


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=12))
def test_bias_is_half_the_accuracy_gap_on_complete_pairs(answers: list[tuple[bool, bool]]
                                                          ) -> None:
    spec = []
    for i, (top_first_forward, top_first_reversed) in enumerate(answers):
        spec += [(str(i), False, "A" if top_first_forward else "B"),
                 (str(i), True, "A" if top_first_reversed else "B")]
    m = pair_metrics(_pairs(spec))
    assert m["position_bias"] == pytest.approx((m["acc"] - m["acc_r"]) / 200)


# ---------------------------------------------------------------- probe images


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> Image.Image:
    path = tmp_path_factory.mktemp("cases") / "k.yaml"
    (case,) = load_case_file(write_case_file(path, [case_dict()]))
    return ProceduralModel().generate(
        request=GenerationRequest(case, "prompt-only", 256, 3)).image


@pytest.mark.parametrize("side", [24, 77, 128, 512])
def test_probe_layouts_invert(side: int) -> None:
    panel = Image.new("RGB", (side, side + 3), (10, 200, 30))
    pair = pair_image(panel, panel)
    for box in pair_boxes(pair.size):
        assert (box.width, box.height) == panel.size
        assert pair.getpixel((box.left + 1, box.top + 1)) == (10, 200, 30)


def test_a_pair_probe_shows_the_panels_unchanged(sheet: Image.Image) -> None:
    probe = next(p for p in probes_for(0, "c", "sha") if p.name == "t1-t4:reversed")
    image = probe_image(sheet, probe, 0.0)
    top, bottom = pair_boxes(image.size)
    cut = panels(sheet)
    assert image.crop(top.as_tuple()).tobytes() == cut[3].tobytes()
    assert image.crop(bottom.as_tuple()).tobytes() == cut[0].tobytes()
    covered = probe_image(sheet, probe, 0.2).crop(top.as_tuple())
    assert covered.getpixel((2, 2)) == covered.getpixel((top.width // 6, top.height // 6))


def test_the_shuffled_grid_is_seeded_and_never_the_sheet_order() -> None:
    seen = {arrangement(seed, "case", "sha") for seed in range(40)}
    assert (0, 1, 2, 3) not in seen and len(seen) > 5
    assert arrangement(7, "case", "sha") == arrangement(7, "case", "sha")
    names = [p.name for p in probes_for(0, "case", "sha")]
    assert names == ["t1-t4", "t1-t4:reversed", "t2-t3", "t2-t3:reversed", "order"]


# ---------------------------------------------------------------- whole probes


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState(responder=sighted)) as running:
        yield running


@pytest.fixture
def stored(tmp_path: Path) -> Path:
    """Procedural good and shuffled sheets of three cases in two domains, as runs store them."""
    kitchen = write_case_file(tmp_path / "kitchen.yaml", [
        case_dict(), case_dict("kitchen-pour-water-2", variant=2)])
    garden = write_case_file(tmp_path / "garden.yaml", [case_dict("garden-water-1")],
                             domain="Garden")
    cases = [*load_case_file(kitchen), *load_case_file(garden)]
    for variant in (None, "shuffled"):
        model = ProceduralModel(variant)
        paths = RunPaths(tmp_path / "reports", model.name, "pixel", "prompt-only")
        for i, case in enumerate(cases):
            image = model.generate(request=GenerationRequest(case, "prompt-only", 256, i)).image
            store_image(paths, case.id, image, {"model": model.name, "setting": "prompt-only",
                                                "case_id": case.id})
    # A judge's report beside the shuffled sheets: its C5 and D9 are shown with the probe.
    atomic_write_json(tmp_path / "reports" / "procedural-shuffled" / "vlm" / "report.json",
                      {"aggregate": {"dims": {"C5": {"mean": 6.5}, "D9": {"mean": 5.25}}}})
    return tmp_path


def _probe(stored: Path, server: ChatServer, *extra: str) -> Callable[..., int]:
    def run(*more: str) -> int:
        return main(["probe-order", str(stored / "reports"), "--cases", str(stored),
                     "--base-url", server.base_url, "--key-env", "none",
                     "--concurrency", "4", "--out", str(stored / "probe.json"), *extra, *more])
    return run


def _report(stored: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((stored / "probe.json").read_text())
    validate_report(report)
    return report


def test_a_sighted_judge_is_fit_and_sees_the_shuffled_sheets(
        stored: Path, server: ChatServer, capsys: pytest.CaptureFixture[str]) -> None:
    assert _probe(stored, server)() == 0
    report = _report(stored)
    good, shuffled = report["runs"]
    assert (good["model"], shuffled["model"]) == ("procedural", "procedural:shuffled")
    m = good["metrics"]
    assert (m["probes"], m["errors"], m["pairs"], m["orders"]) == (15, 0, 12, 3)
    assert (m["acc"], m["acc_r"], m["group"], m["f1"]) == (100.0, 100.0, 100.0, 100.0)
    assert (m["position_bias"], m["exact_order"], m["kendall_tau"]) == (0.0, 100.0, 1.0)
    assert set(good["by_domain"]) == {"Kitchen", "Garden"}
    assert good["by_domain"]["Garden"]["probes"] == 5
    assert good["verdict"]["status"] == "fit"
    assert report["judge_fitness"]["status"] == "fit"
    # The shuffled sheets show t3, t1, t4, t2: the t1/t4 cells are out of order both ways.
    s = shuffled["metrics"]
    assert (s["acc"], s["acc_r"], s["group"], s["exact_order"]) == (50.0, 50.0, 50.0, 0.0)
    assert s["kendall_tau"] == 0.0
    assert shuffled["verdict"] == {"role": "model", "status": "weak", "reason":
                                   "weak temporal evidence: group score 50.0 < 70"}
    assert shuffled["scores"] == {"vlm": {"C5": 6.5, "D9": 5.25}}
    assert (report["asked"], report["cached"], len(server.state.requests)) == (30, 0, 30)
    out = capsys.readouterr().out
    assert "judge fit" in out and "WEAK TEMPORAL EVIDENCE (vlm: C5 6.50 D9 5.25)" in out
    assert "judge: fit" in out and f"report: {stored / 'probe.json'}" in out
    request = server.state.requests[0]
    assert request["response_format"]["json_schema"]["strict"] is True
    assert "pour water" in request["messages"][0]["content"][0]["text"]


def test_a_second_run_asks_nothing(stored: Path, server: ChatServer,
                                   monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    probe = _probe(stored, server)
    assert probe() == 0
    first = _report(stored)
    capsys.readouterr()
    server.state.requests.clear()
    monkeypatch.setenv("NO_KEY_HERE", "")
    # Everything is cached: neither a key nor a request is needed.
    assert probe("--key-env", "NO_KEY_HERE", "--json") == 0
    second = _report(stored)
    assert json.loads(capsys.readouterr().out) == second
    assert server.state.requests == []
    assert (second["asked"], second["cached"]) == (0, 30)
    assert second["runs"] == first["runs"]
    cache = list((stored / "reports" / "procedural" / "probe-order").glob("*.json"))
    assert len(cache) == 15
    # Another judge model is another cache entry.
    assert probe("--judge-model", "other-vlm") == 0
    assert len(server.state.requests) == 30


def test_an_always_top_judge_is_unfit(stored: Path, server: ChatServer,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    server.state.responder = biased
    assert _probe(stored, server, "--sample", "2")() == 1
    report = _report(stored)
    good = report["runs"][0]
    assert good["sheets"] == 2
    m = good["metrics"]
    assert (m["position_bias"], m["group"], m["acc"], m["acc_r"]) == (0.5, 0.0, 100.0, 0.0)
    assert good["verdict"]["status"] == "unfit"
    assert report["judge_fitness"]["status"] == "unfit"
    assert "JUDGE UNFIT" in capsys.readouterr().out


def test_failed_requests_are_errors_with_reasons_never_wrong_answers(
        stored: Path, server: ChatServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    server.state.fault_queue = ["500", "500", "500"]
    probe = _probe(stored, server, "--concurrency", "1", "--retries", "2", "--sample", "1")
    assert probe() == 0
    report = _report(stored)
    good = report["runs"][0]
    assert good["errors"] == [{"case_id": good["errors"][0]["case_id"], "probe": "t1-t4",
                               "reason": good["errors"][0]["reason"]}]
    assert good["errors"][0]["reason"].startswith("HTTP 500 from the endpoint after 2 retries")
    m = good["metrics"]
    assert (m["errors"], m["answered"], m["acc"], m["acc_r"]) == (1, 4, 100.0, 100.0)
    assert m["group"] == 100.0  # the pair with a failed presentation is no group
    assert "errors (1, not scored):" in capsys.readouterr().out
    # Errors are not cached: the next run asks that probe again, and only that one.
    server.state.requests.clear()
    assert probe() == 0
    assert len(server.state.requests) == 1
    assert _report(stored)["runs"][0]["errors"] == []
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert main(["probe-order", str(stored / "reports"), "--cases", str(stored),
                 "--judge-model", "uncached", "--out", str(stored / "x.json")]) == 2
    assert "environment variable OPENAI_API_KEY" in capsys.readouterr().err
    assert main(["probe-order", str(stored / "nowhere")]) == 2
