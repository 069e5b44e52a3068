"""Judge prices: the shipped table, cached input, unknown costs shown as unknown, and the
dry run's estimate and exit status."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.backends.prices import (
    Price,
    PriceError,
    Rates,
    known_cost,
    parse_price,
    price_for,
    shipped_table,
    sum_costs,
)
from pytest_imagetime.cases.loading import builtin_cases_dir, load_case_file
from pytest_imagetime.cases.model import Case
from pytest_imagetime.judges.base import JudgeOptions, SheetToJudge
from pytest_imagetime.judges.prompt import SchemaKey, schema_key
from pytest_imagetime.judges.vlm import VlmJudge
from pytest_imagetime.models.base import GenerationRequest
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, make_case, write_case_file
from tests.fake_openai import ChatServer, ServerState, chat_server

KEY = "sk-prices-test-KEY-0a1b2c3d"
CACHED = 1024  # the cached prefix the fake server reports once it saw a system prompt


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with chat_server(ServerState(cache_prefix_tokens=CACHED)) as running:
        yield running


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch, server: ChatServer) -> ChatServer:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return server


# ---------------------------------------------------------------- the table


def test_the_default_judge_model_and_its_family_have_published_prices() -> None:
    gpt55 = price_for("gpt-5.5")
    assert gpt55 == Price(Rates(5.0, 0.5, 30.0), Rates(2.5, 0.25, 15.0))
    # Dated snapshots find their family; the longest prefix wins.
    assert price_for("gpt-5.5-2026-04-23") == gpt55
    assert price_for("gpt-5.4-mini-2026-03-17") == price_for("gpt-5.4-mini")
    assert price_for("gpt-5.4-mini") != price_for("gpt-5.4")
    for model in ("gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano", "gpt-5.2", "gpt-5.1", "gpt-5",
                  "gpt-5-mini", "gpt-5-nano"):
        price = price_for(model)
        assert price is not None, model
        assert price.standard.cached_input == pytest.approx(price.standard.input / 10), model
        assert price.batch.input == pytest.approx(price.standard.input / 2), model
        assert price.batch.output == pytest.approx(price.standard.output / 2), model
    assert price_for("someone-elses-vlm") is None


def test_the_shipped_table_says_where_its_prices_come_from_and_when() -> None:
    from importlib import resources

    data = json.loads(resources.files("pytest_imagetime").joinpath(
        "data/judge_prices.json").read_text())
    assert "developers.openai.com/api/docs/pricing" in data["source"]
    assert data["date"] == "2026-11-27"
    assert set(shipped_table()) == set(data["prices"])


def test_a_two_number_entry_follows_the_providers_rules() -> None:
    price = parse_price([2.0, 8.0], "t")
    assert price.standard == Rates(2.0, 2.0, 8.0)  # no cached rate: the input rate
    assert price.batch == Rates(1.0, 1.0, 4.0)  # the Batch API: half of each


@pytest.mark.parametrize(("entry", "message"), [
    ([1.0], "t: expected [input, output]"),
    ({"input": 1.0}, "t: output is missing"),
    ({"input": 1.0, "output": -2}, "t: output must be a number of USD per 1M tokens"),
    ({"input": 1.0, "output": 2.0, "cache": 0.1}, "t: unknown fields ['cache']"),
    ({"input": 1.0, "output": 2.0, "batch": {"input": 0.5}}, "t.batch: output is missing"),
    ("cheap", "t: expected [input, output] or an object"),
])
def test_a_bad_entry_names_what_is_wrong(entry: Any, message: str) -> None:
    with pytest.raises(PriceError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_price(entry, "t")


def test_a_price_file_beside_the_shipped_table(tmp_path: Path) -> None:
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({"prices": {
        "house-vlm": {"input": 1.0, "cached_input": 0.25, "output": 4.0,
                      "batch": {"input": 0.6, "output": 2.0}}}}))
    price = price_for("house-vlm", prices_file=table)
    assert price == Price(Rates(1.0, 0.25, 4.0), Rates(0.6, 0.6, 2.0))
    assert price_for("gpt-5.5", prices_file=table) == price_for("gpt-5.5")
    assert price_for("house-vlm", (3.0, 9.0, 0.3)) == Price.of(3.0, 9.0, 0.3)
    table.write_text('{"prices": {"house-vlm": {"input": "one", "output": 2}}}')
    with pytest.raises(PriceError, match=f"{table}: house-vlm: input must be a number"):
        price_for("house-vlm", prices_file=table)


@given(tokens_in=st.integers(0, 10**7), tokens_out=st.integers(0, 10**6),
       share=st.floats(0, 1), rates=st.tuples(*[st.floats(0, 100)] * 3))
def test_cached_tokens_never_cost_more_and_batch_is_half(tokens_in: int, tokens_out: int,
                                                         share: float,
                                                         rates: tuple[float, float, float]
                                                         ) -> None:
    input_usd, output_usd, discount = rates
    price = Price.of(input_usd, output_usd, input_usd * discount / 100)
    cached = int(tokens_in * share)
    full = known_cost(price, tokens_in, tokens_out)
    with_cache = known_cost(price, tokens_in, tokens_out, cached)
    assert full is not None and with_cache is not None
    assert with_cache <= full + 1e-12
    batch = known_cost(price, tokens_in, tokens_out, cached, batch=True)
    assert batch == pytest.approx(with_cache / 2)
    # More cached tokens than input tokens cannot make a negative cost.
    assert price.standard.cost(tokens_in, tokens_out, tokens_in + 5) >= 0
    assert known_cost(None, tokens_in, tokens_out, cached) is None


def test_costs_add_up_unless_one_is_unknown() -> None:
    assert sum_costs([0.1, 0.2]) == pytest.approx(0.3)
    assert sum_costs([]) == 0.0
    assert sum_costs([0.1, None]) is None


# ---------------------------------------------------------------- prompt caching


def _sheet(case_id: str) -> SheetToJudge:
    case = next((c for c in load_case_file(builtin_cases_dir() / "kitchen.yaml")
                 if c.id == case_id), None) or make_case(case_id)
    image = ProceduralModel().generate(request=GenerationRequest(case, "prompt-only", 128, 1)).image
    return SheetToJudge(case, "prompt-only", image, Path("x.png"), "0" * 64)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@pytest.mark.parametrize("response_format", ["json_schema", "json_object"])
def test_every_request_starts_with_the_same_bytes_up_to_the_case(
        judge_env: ChatServer, response_format: str) -> None:
    judge = VlmJudge(None, options=JudgeOptions(base_url=judge_env.base_url,
                                                response_format=response_format))
    kitchen = load_case_file(builtin_cases_dir() / "kitchen.yaml")
    # Two cases alike in predicate and forbidden-state ids and nulls: one answer schema.
    alike: dict[SchemaKey, list[Case]] = {}
    for case in kitchen:
        alike.setdefault(schema_key(case, "prompt-only"), []).append(case)
    pair = next(cases for cases in alike.values() if len(cases) > 1)[:2]
    for case in pair:
        judge.judge(sheet=_sheet(case.id))
    first, second = (json.dumps(r["messages"], ensure_ascii=False)
                     for r in judge_env.state.requests)
    shared = _common_prefix(first, second)
    # The system prompt lies wholly before the first differing byte, which lies inside the
    # case specification.
    system = json.dumps(judge_env.state.requests[0]["messages"][0], ensure_ascii=False)
    assert first.startswith("[" + system)
    assert shared > len(system)
    head = first[:shared]
    # The first difference is in the case's own text (its prompt comes first), before any
    # image; in json_object mode the case's schema follows the case.
    assert head.index("Case specification (JSON)") < shared < first.index("image_url")
    assert pair[0].prompt not in head
    if response_format == "json_object":
        assert first.index("Case specification (JSON)") < first.index(
            "Answer with a JSON object matching this JSON Schema")
    # Both calls send the same response format, so it caches with the prefix.
    assert (judge_env.state.requests[0]["response_format"]
            == judge_env.state.requests[1]["response_format"])


def test_cached_input_is_priced_at_the_cached_rate(judge_env: ChatServer) -> None:
    judge = VlmJudge(None, options=JudgeOptions(base_url=judge_env.base_url))
    first = judge.judge(sheet=_sheet("kitchen-pour-water-1"))
    second = judge.judge(sheet=_sheet("kitchen-pour-water-2"))
    assert (first.tokens_in, first.tokens_cached, first.tokens_out) == (1500, 0, 500)
    assert (second.tokens_in, second.tokens_cached) == (1500, CACHED)
    assert first.cost_usd == pytest.approx((1500 * 5.0 + 500 * 30.0) / 1e6)
    assert second.cost_usd == pytest.approx(((1500 - CACHED) * 5.0 + CACHED * 0.5
                                             + 500 * 30.0) / 1e6)


# ---------------------------------------------------------------- whole runs


def _cases(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "k.yaml", [case_dict(), case_dict(
        "kitchen-pour-water-2", variant=2), case_dict("kitchen-pour-water-3", variant=1)])


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    validate_report(report)
    return report


def test_the_default_judge_is_priced_with_its_cache_hits(pytester: pytest.Pytester,
                                                        judge_env: ChatServer) -> None:
    _cases(pytester)
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
                                "--imagetime-judge-concurrency=1")
    result.assert_outcomes(passed=3)
    first = (1500 * 5.0 + 500 * 30.0) / 1e6
    cached = ((1500 - CACHED) * 5.0 + CACHED * 0.5 + 500 * 30.0) / 1e6
    total = first + 2 * cached
    result.stdout.fnmatch_lines([
        f"*3/3 done, 0 errors, Overall *, spent ${total:.2f}, *",
        f"procedural: judge cost ${total:.4f} (${total / 3:.4f} per case), spent this session "
        f"${total:.4f}, prompt cache 45.5% of 4500 input tokens",
    ])
    report = _report(pytester.path / "reports/procedural/vlm/report.json")
    # Each item's cost travels rounded to 4 places (as a JUnit property).
    assert report["aggregate"]["cost_usd"] == pytest.approx(total, abs=2e-4)
    assert report["spent_usd"] == pytest.approx(total, abs=2e-4)
    assert report["prompt_cache"] == {"tokens_in": 4500, "tokens_cached": 2 * CACHED,
                                      "hit_rate": pytest.approx(2 * CACHED / 4500)}
    assert sorted(i["tokens_cached"] for i in report["items"]) == [0, CACHED, CACHED]
    assert report["manifest"]["judge"]["config"]["price_usd_per_mtok"] == [5.0, 30.0]
    # A resumed run pays nothing and still knows what the run cost.
    again = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128")
    again.assert_outcomes(passed=3)
    again.stdout.fnmatch_lines([f"*judge cost ${total:.4f}*spent this session $0.0000*"])
    assert len(judge_env.state.requests) == 3


def test_an_unknown_price_is_unknown_everywhere(pytester: pytest.Pytester,
                                                judge_env: ChatServer) -> None:
    _cases(pytester)
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
                                "--imagetime-judge-model=mystery-vlm", "--imagetime-html=html")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([
        "*3/3 done, 0 errors, Overall *, spent unknown, *",
        "procedural: judge cost unknown (no price for mystery-vlm; give "
        "--imagetime-judge-price), spent this session unknown, prompt cache *",
    ])
    assert "$0.00" not in result.stdout.str()
    report = _report(pytester.path / "reports/procedural/vlm/report.json")
    assert report["aggregate"]["cost_usd"] is None and report["spent_usd"] is None
    assert all(i["cost_usd"] is None for i in report["items"])
    index = (pytester.path / "html/index.html").read_text()
    assert "unknown" in index and "$0.0000" not in index
    record = json.loads(next((pytester.path / "reports").rglob("judgments/*.json")).read_text())
    assert record["judgment"]["cost_usd"] is None


def test_the_dry_run_prices_the_default_judge_and_exits_0(pytester: pytest.Pytester,
                                                          judge_env: ChatServer) -> None:
    _cases(pytester)
    dry = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-dry-run")
    assert dry.ret == pytest.ExitCode.OK
    dry.stdout.fnmatch_lines(["run*items*to judge*tokens in*cached*tokens out*est. cost",
                              "procedural | vlm*3*3*$0.*",
                              "total: $0.*; cached: *nothing was generated or judged"])
    assert "unknown" not in dry.stdout.str()
    standard = float(dry.stdout.str().split("total: $")[1].split(";")[0])
    batch = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-dry-run",
                               "--imagetime-judge-batch")
    assert batch.ret == pytest.ExitCode.OK
    batch.stdout.fnmatch_lines(["total: $* at Batch API rates; *"])
    halved = float(batch.stdout.str().split("total: $")[1].split(" ")[0])
    assert halved == pytest.approx(standard / 2, abs=0.011)
    assert judge_env.state.requests == []
    # A dry run that could not print its estimate still fails.
    (pytester.path / "bad.yaml").write_text("cases: [\n")
    broken = pytester.runpytest("bad.yaml", "--imagetime-model=procedural",
                                "--imagetime-dry-run")
    assert broken.ret != pytest.ExitCode.OK


def test_max_cost_runs_with_the_shipped_price_of_the_default_judge(
        pytester: pytest.Pytester, judge_env: ChatServer) -> None:
    _cases(pytester)
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=128",
                                "--imagetime-max-cost=0.04", "--imagetime-judge-concurrency=1")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*not judged: the judge budget is spent*"])


def test_a_bad_judge_price_option_says_what_it_takes(pytester: pytest.Pytester,
                                                     judge_env: ChatServer) -> None:
    _cases(pytester)
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural",
                                "--imagetime-judge-price=5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--imagetime-judge-price*IN,OUT or IN,OUT,CACHED*"])


def test_the_dry_run_of_an_offline_judge_costs_nothing(pytester: pytest.Pytester) -> None:
    _cases(pytester)
    dry = pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-dry-run",
                             "--imagetime-judge=pixel")
    assert dry.ret == pytest.ExitCode.OK
    dry.stdout.fnmatch_lines(["procedural | pixel*3*3*$0.00", "total: $0.00; *"])


def test_judgments_stored_with_the_price_in_their_key_are_kept(pytester: pytest.Pytester,
                                                               judge_env: ChatServer) -> None:
    from pytest_imagetime.store.keys import input_key

    _cases(pytester)
    args = ["k.yaml", "--imagetime-model=procedural", "--imagetime-size=128"]
    pytester.runpytest(*args).assert_outcomes(passed=3)
    # As a run before this version stored them: gpt-5.5 without a price, the price in the
    # key, the cost 0.
    for path in (pytester.path / "reports").rglob("judgments/*.json"):
        record = json.loads(path.read_text())
        record["judge_config"]["price_usd_per_mtok"] = None
        record["input_key"] = input_key({
            "judge": record["judge_config"], "image_sha256": record["image_sha256"],
            "case_spec_sha256": record["case_spec_sha256"], "setting": record["setting"],
            "rubric_version": record["rubric_version"]})
        record["judgment"]["cost_usd"] = 0.0
        path.write_text(json.dumps(record))
    dry = pytester.runpytest(*args, "--imagetime-dry-run")
    dry.stdout.fnmatch_lines(["procedural | vlm*3*0*"])
    again = pytester.runpytest(*args)
    again.assert_outcomes(passed=3)
    assert len(judge_env.state.requests) == 3  # nothing judged again
    report = _report(pytester.path / "reports/procedural/vlm/report.json")
    assert all(i["cost_usd"] is None for i in report["items"])  # it was not known: unknown
    assert report["aggregate"]["cost_usd"] is None and report["spent_usd"] == 0.0
    for path in (pytester.path / "reports").rglob("judgments/*.json"):
        assert json.loads(path.read_text())["judgment"]["cost_usd"] is None  # stored anew


def test_the_tempviz_summary_says_unknown_for_a_judge_model_of_no_price() -> None:
    from pytest_imagetime.tempviz.report import LABELS, summary_lines

    summary = {"n": 2, "pass_rate": 0.5, "errors": 0, "cost_usd": 0.0,
               "accuracy": dict.fromkeys(LABELS, 0.5)}

    def report(price: list[float] | None) -> dict[str, Any]:
        return {"manifest": {"model": {"spec": "procedural"}, "judge": {
            "name": "judge-x", "config": {"price_usd_per_mtok": price}}},
            "summary": summary, "by_category": {}}

    assert summary_lines([report(None)])[0].endswith("judge cost unknown")
    assert summary_lines([report([2.0, 8.0])])[0].endswith("judge cost $0.0000")
