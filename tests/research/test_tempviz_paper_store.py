"""The answer store of ``imagetime tempviz judge`` run as a user runs it, against the local
OpenAI-compatible server: a stored rerun asks nothing (no key, no server), a killed run
resumes, failures are asked again, the key follows the inputs, and the cost lines and
``--max-cost``."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.cli import main
from tests import tempviz_data
from tests.fake_openai import ChatServer, ServerState, chat_server, closed_port_url
from tests.tempviz_data import write_images, write_tables

ITEMS = ("Maps-0", "Maps-1", "Animals-0", "Landscapes-0")
UNSET_KEY = "IMAGETIME_TEST_KEY_THAT_IS_NOT_SET"
# The local server bills 1500 tokens in and 500 out per call: $0.002 at $1 per 1M tokens.
PRICE = ["--price", "1,1"]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState()) as running:
        running.state.responder = lambda request: "yes"
        yield running


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return write_images(tmp_path / "reports", "flux-dev", ITEMS)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_tables(tmp_path / "tempviz")


def store_of(out: Path) -> Path:
    return out / "flux-dev" / "tempviz" / "paper-judge"


def rows_of(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh)}


def endpoint(server: ChatServer) -> list[str]:
    return ["--base-url", server.base_url, "--key-env", "none", "--retries", "0",
            "--concurrency", "1"]


def dead_endpoint(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """An endpoint nobody answers at, with a key variable that is not set."""
    monkeypatch.delenv(UNSET_KEY, raising=False)
    return ["--base-url", closed_port_url(), "--key-env", UNSET_KEY]


def judge(out: Path, data: Path, table: Path, *words: str) -> int:
    return main(["tempviz", "judge", str(out), "--data", str(data), "-o", str(table), *words])


def fail_after(server: ChatServer, answers: int) -> None:
    tempviz_data.fail_after(server, answers, lambda request: "yes")


def summary(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_a_stored_rerun_needs_neither_a_key_nor_a_server(
        server: ChatServer, out: Path, data: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    assert judge(out, data, first, *endpoint(server), *PRICE) == 0
    assert len(server.state.requests) == len(ITEMS)
    assert summary(capsys.readouterr().out) == \
        "asked 4, reused 0 from the store, errors 0, spent $0.0080"
    assert len(list(store_of(out).glob("*.json"))) == len(ITEMS)
    assert judge(out, data, second, *dead_endpoint(monkeypatch), *PRICE) == 0
    assert second.read_bytes() == first.read_bytes()
    assert len(server.state.requests) == len(ITEMS)
    assert summary(capsys.readouterr().out) == ("asked 0, reused 4 from the store, errors 0, "
                                                "spent $0.0000, $0.0080 reused from the store")


def test_a_killed_run_resumes_asking_only_what_is_missing(
        server: ChatServer, out: Path, data: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "judge.csv"
    fail_after(server, 2)
    assert judge(out, data, table, *endpoint(server)) == 0
    rows = rows_of(table)
    failed = [r for r in rows.values() if r["error"]]
    assert len(failed) == 2 and all(r["prediction"] == "" for r in failed)
    assert "errors 2" in summary(capsys.readouterr().out)
    assert len(list(store_of(out).glob("*.json"))) == 2  # failures are not stored
    server.state.fault_rate = 0.0
    server.state.requests.clear()
    assert judge(out, data, table, *endpoint(server)) == 0
    assert len(server.state.requests) == 2  # only the two that failed
    assert {r["prediction"] for r in rows_of(table).values()} == {"yes"}
    assert summary(capsys.readouterr().out).startswith(
        "asked 2, reused 2 from the store, errors 0, spent $")


def test_a_damaged_store_file_is_asked_again(server: ChatServer, out: Path, data: Path,
                                             tmp_path: Path) -> None:
    table = tmp_path / "judge.csv"
    assert judge(out, data, table, *endpoint(server)) == 0
    damaged = sorted(store_of(out).glob("*.json"))[0]
    damaged.write_text(damaged.read_text()[:20])
    server.state.requests.clear()
    assert judge(out, data, table, *endpoint(server)) == 0
    assert len(server.state.requests) == 1
    assert json.loads(damaged.read_text())["value"] == {"answer": "yes", "analysis": None}


def test_an_unusable_answer_is_an_error_that_the_next_run_asks_again(
        server: ChatServer, out: Path, data: Path, tmp_path: Path) -> None:
    table = tmp_path / "judge.csv"
    server.state.responder = lambda request: "maybe"
    assert judge(out, data, table, *endpoint(server), "--reasks", "0") == 0
    assert all(r["prediction"] == "" and "expected 'yes' or 'no'" in r["error"]
               for r in rows_of(table).values())
    assert not store_of(out).exists() or not list(store_of(out).glob("*.json"))
    server.state.responder = lambda request: "no"
    server.state.requests.clear()
    assert judge(out, data, table, *endpoint(server)) == 0
    assert len(server.state.requests) == len(ITEMS)
    assert {r["prediction"] for r in rows_of(table).values()} == {"no"}


def exemplars(tmp_path: Path, analysis: str = "Modern borders.") -> Path:
    folder = tmp_path / "shots"
    folder.mkdir(exist_ok=True)
    Image.new("RGB", (8, 8), (200, 0, 0)).save(folder / "0.png")
    path = folder / "exemplars.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["image", "category", "prompt", "cue", "answer", "analysis"])
        writer.writerow(["0.png", "", "A map of asia in 1800", "1800", "no", analysis])
    return path


@pytest.mark.parametrize(("change", "asked"), [
    (["--judge-model", "another-vlm"], len(ITEMS)),
    (["--style", "instructed"], len(ITEMS)),
    (["--exemplars", "EXEMPLARS", "--shots", "1"], len(ITEMS)),
    (["--base-url", "OTHER"], 0),  # the endpoint decides nothing: the answers are reused
    (["--timeout", "30", "--reasks", "5", "--concurrency", "3"], 0),
])
def test_the_key_holds_what_decides_an_answer(
        change: list[str], asked: int, server: ChatServer, out: Path, data: Path,
        tmp_path: Path) -> None:
    table = tmp_path / "judge.csv"
    server.state.responder = lambda request: (
        "ANALYSIS: fine.\nRATING: Accept" if "ANALYSIS" in json.dumps(request) else "yes")
    assert judge(out, data, table, *endpoint(server)) == 0
    server.state.requests.clear()
    with chat_server(ServerState(responder=server.state.responder)) as other:
        words = [other.base_url if w == "OTHER" else
                 str(exemplars(tmp_path)) if w == "EXEMPLARS" else w for w in change]
        assert judge(out, data, table, *endpoint(server), *words) == 0
        assert len(server.state.requests) + len(other.state.requests) == asked


def test_a_changed_exemplar_or_image_is_asked_again(server: ChatServer, out: Path, data: Path,
                                                    tmp_path: Path) -> None:
    table = tmp_path / "judge.csv"
    words = ["--style", "instructed", "--exemplars", str(exemplars(tmp_path)), "--shots", "1"]
    server.state.responder = lambda request: "ANALYSIS: fine.\nRATING: Accept"
    assert judge(out, data, table, *endpoint(server), *words) == 0
    server.state.requests.clear()
    exemplars(tmp_path, analysis="The borders are those of 1900.")
    assert judge(out, data, table, *endpoint(server), *words) == 0
    assert len(server.state.requests) == len(ITEMS)
    server.state.requests.clear()
    image = out / "flux-dev" / "tempviz" / "images" / "Maps-0.png"
    Image.new("RGB", (16, 16), (1, 2, 3)).save(image)
    assert judge(out, data, table, *endpoint(server), *words) == 0
    assert len(server.state.requests) == 1


def test_max_cost_stops_asking_and_the_rest_are_error_rows(
        server: ChatServer, out: Path, data: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "judge.csv"
    assert judge(out, data, table, *endpoint(server), *PRICE, "--max-cost", "0.003") == 0
    assert len(server.state.requests) == 2  # $0.002 each: the second reaches the budget
    rows = list(rows_of(table).values())
    assert [r["prediction"] for r in rows] == ["yes", "yes", "", ""]
    assert all(r["error"].startswith("not asked: --max-cost reached ($0.0040 of $0.0030")
               for r in rows[2:])
    assert summary(capsys.readouterr().out) == \
        "asked 2, reused 0 from the store, errors 2, spent $0.0040"
    assert judge(out, data, table, *endpoint(server), *PRICE, "--max-cost", "0.003") == 0
    assert len(server.state.requests) == 4  # reused answers cost nothing of the budget
    assert summary(capsys.readouterr().out) == ("asked 2, reused 2 from the store, errors 0, "
                                                "spent $0.0040, $0.0040 reused from the store")


def test_max_cost_needs_a_known_price(server: ChatServer, out: Path, data: Path,
                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert judge(out, data, tmp_path / "judge.csv", *endpoint(server), "--judge-model",
                 "fake-judge", "--max-cost", "1") == 2
    assert capsys.readouterr().err == (
        "imagetime tempviz judge: --max-cost needs the price of 'fake-judge', and none is "
        "known: give --price IN,OUT (USD per 1M tokens)\n")
    assert server.state.requests == []


def test_an_unknown_price_is_an_unknown_cost_never_zero(
        server: ChatServer, out: Path, data: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "judge.csv"
    assert judge(out, data, table, *endpoint(server), "--judge-model", "fake-judge") == 0
    assert summary(capsys.readouterr().out) == (
        "asked 4, reused 0 from the store, errors 0, spent unknown (no price for "
        "'fake-judge'; give --price IN,OUT)")
    assert judge(out, data, table, *endpoint(server), "--judge-model", "fake-judge") == 0
    assert summary(capsys.readouterr().out).endswith("spent $0.0000, unknown reused from the "
                                                     "store")


def test_the_default_judge_is_priced_from_the_shipped_table(
        server: ChatServer, out: Path, data: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert judge(out, data, tmp_path / "judge.csv", *endpoint(server)) == 0
    # gpt-5.5: $5 in, $30 out per 1M tokens; 1500 in and 500 out per call
    assert summary(capsys.readouterr().out).endswith("spent $0.0900")
    record = json.loads(sorted(store_of(out).glob("*.json"))[0].read_text())
    assert record["cost_usd"] == pytest.approx(0.0225)
    assert record["judge_model"] == "gpt-5.5" and record["content"] == "yes"


def test_no_store_asks_everything_and_keeps_nothing(server: ChatServer, out: Path,
                                                    data: Path, tmp_path: Path) -> None:
    table = tmp_path / "judge.csv"
    for _ in range(2):
        assert judge(out, data, table, *endpoint(server), "--no-store") == 0
    assert len(server.state.requests) == 2 * len(ITEMS)
    assert not store_of(out).exists()


def test_store_names_the_folder(server: ChatServer, out: Path, data: Path, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    table, store = tmp_path / "judge.csv", tmp_path / "answers"
    assert judge(out, data, table, *endpoint(server), "--store", str(store)) == 0
    assert len(list(store.glob("*.json"))) == len(ITEMS) and not store_of(out).exists()
    assert judge(out, data, table, *dead_endpoint(monkeypatch), "--store", str(store)) == 0
    assert len(server.state.requests) == len(ITEMS)


def test_an_answer_that_cannot_be_stored_is_used_and_named(
        server: ChatServer, out: Path, data: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    table, blocked = tmp_path / "judge.csv", tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert judge(out, data, table, *endpoint(server), "--store", str(blocked)) == 0
    assert {r["prediction"] for r in rows_of(table).values()} == {"yes"}
    captured = capsys.readouterr()
    assert summary(captured.out).startswith("asked 4, reused 0 from the store, errors 0")
    assert captured.err.startswith("imagetime tempviz judge: 4 answers could not be stored (")
    assert captured.err.endswith("); the next run asks them again\n")


@pytest.mark.parametrize("words", [["--price", "1"], ["--price", "-1,2"], ["--max-cost", "x"],
                                   ["--store", "s", "--no-store"]])
def test_bad_price_budget_and_store_words_are_refused(
        words: list[str], out: Path, data: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        judge(out, data, tmp_path / "judge.csv", *words)
    assert raised.value.code == 2
    assert "imagetime tempviz judge: error: " in capsys.readouterr().err

