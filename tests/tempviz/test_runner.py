"""One TempViz item through the item engine: drawn and asked once, reused while its inputs stay,
errors with reasons."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.engine.item_error import ItemError
from pytest_imagetime.engine.pipeline import CostBudget, Job, Pipeline
from pytest_imagetime.judges.base import JudgeOptions
from pytest_imagetime.models.base import Generated, GenerationRequest, ModelError
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.tempviz.judge import Answer, Answers, TempvizJudge
from pytest_imagetime.tempviz.prompts import Prompt, load_table
from pytest_imagetime.tempviz.runner import (
    SUITE_DIR,
    Outcome,
    TempvizRun,
    TempvizSuite,
    run_paths,
    stored_outcome_exists,
)
from tests.tempviz_data import write_tables


class _Judge(TempvizJudge):
    """Answers from a list instead of an endpoint, counting the calls."""

    def __init__(self, replies: tuple[str, str, str] = ("yes", "yes", "no"),
                 fail: Exception | None = None) -> None:
        super().__init__(JudgeOptions(model="judge-m", key_env=None, calls=False))
        self.replies = replies
        self.fail = fail
        self.asked: list[str] = []

    def answer(self, prompt: Prompt, image_url: str) -> Answers:
        self.asked.append(prompt.id)
        assert image_url.startswith("data:image/png;base64,")
        if self.fail is not None:
            raise self.fail
        answers = {q: Answer(a, None, a, 1) for q, a in zip(("q1", "q2", "q3"), self.replies,
                                                              strict=True)}
        return Answers(answers, "judge-m", 100, 3, 0.01, 0.5)


class _Broken(ProceduralModel):
    def generate(self, *, request: GenerationRequest) -> Generated:
        raise ModelError("out of memory")


@pytest.fixture
def prompt(tmp_path: Path) -> Prompt:
    data = write_tables(tmp_path / "data", ["Maps"])
    return load_table(data / "Maps.csv")[0]


def run_item(run: TempvizRun, prompt: Prompt, budget: CostBudget | None = None) -> Outcome:
    """The item run inline, as a process without a plan runs it."""
    pipeline = Pipeline(TempvizSuite(), concurrency=1, lookahead=2, budget=budget)
    try:
        outcome = pipeline.outcome(Job(prompt.id, run, prompt, run.base_record(prompt)))
    finally:
        pipeline.close()
    assert isinstance(outcome, Outcome)
    return outcome


def _run(tmp_path: Path, judge: _Judge, **changes: object) -> TempvizRun:
    model = ProceduralModel()
    run = TempvizRun(model=model, judge=judge,
                     paths=run_paths(tmp_path / "out", model.name, judge.name), size=64, seed=1)
    return replace(run, **changes)  # type: ignore[arg-type]


def test_runs_live_beside_the_models_sheets(tmp_path: Path) -> None:
    paths = run_paths(tmp_path, "files:some/dir", "judge")
    assert paths.run_dir.parent.name == SUITE_DIR
    assert paths.run_dir.name == "judge"
    assert paths.run_dir.parent.parent.parent == tmp_path


def test_an_item_is_drawn_asked_and_recorded(tmp_path: Path, prompt: Prompt) -> None:
    judge = _Judge()
    run = _run(tmp_path, judge)
    assert not stored_outcome_exists(run, prompt)
    outcome = run_item(run, prompt)
    record = outcome.record
    assert (record.q1, record.q2, record.q3) == ("yes", "yes", "no")
    assert record.generated and record.judged
    assert (record.cost_usd, record.tokens_in, record.tokens_out) == (0.01, 100, 3)
    assert record.key == f"{prompt.id}[procedural]"
    with Image.open(run.paths.image(prompt.id)) as image:
        assert image.mode == "RGB"
    stored = json.loads(run.paths.judgment(prompt.id).read_text())
    assert stored["answers"]["q3"]["answer"] == "no"
    assert judge.asked == [prompt.id]
    assert stored_outcome_exists(run, prompt)


def test_a_second_run_generates_and_asks_nothing(tmp_path: Path, prompt: Prompt) -> None:
    first = run_item(_run(tmp_path, _Judge()), prompt).record
    judge = _Judge()
    again = run_item(_run(tmp_path, judge), prompt).record
    assert judge.asked == []
    assert not again.generated and not again.judged
    assert again.image_sha256 == first.image_sha256
    assert (again.q1, again.q2, again.q3) == (first.q1, first.q2, first.q3)
    rejudged = run_item(_run(tmp_path, judge, rejudge=True), prompt).record
    assert judge.asked == [prompt.id] and rejudged.judged and not rejudged.generated
    redrawn = run_item(_run(tmp_path, judge, regenerate=True), prompt).record
    assert redrawn.generated and not redrawn.judged  # the same pixels: the answers still hold


def test_damaged_stored_answers_are_asked_again(tmp_path: Path, prompt: Prompt) -> None:
    run = _run(tmp_path, _Judge())
    run_item(run, prompt)
    path = run.paths.judgment(prompt.id)
    stored = json.loads(path.read_text())
    stored["answers"]["q2"]["answer"] = "maybe"
    path.write_text(json.dumps(stored))
    assert not stored_outcome_exists(run, prompt)
    judge = _Judge()
    assert run_item(_run(tmp_path, judge), prompt).record.judged
    assert judge.asked == [prompt.id]


def test_a_model_failure_is_an_item_error_with_its_reason(tmp_path: Path,
                                                          prompt: Prompt) -> None:
    run = _run(tmp_path, _Judge(), model=_Broken())
    with pytest.raises(ItemError, match=f"model procedural failed on {prompt.id}: "
                                        "out of memory$"):
        run_item(run, prompt)


def test_a_judge_failure_is_an_item_error_with_its_reason(tmp_path: Path,
                                                          prompt: Prompt) -> None:
    run = _run(tmp_path, _Judge(fail=KeyError("answers")))
    with pytest.raises(ItemError, match=f"judge judge-m failed on {prompt.id}: "
                                        "KeyError: 'answers'"):
        run_item(run, prompt)


def test_a_spent_budget_asks_nothing(tmp_path: Path, prompt: Prompt) -> None:
    budget = CostBudget(0.01)
    judge = _Judge()
    run_item(_run(tmp_path, judge), prompt, budget)
    assert budget.spent_usd == pytest.approx(0.01)
    with pytest.raises(ItemError, match="the judge budget is spent"):
        run_item(_run(tmp_path, judge, rejudge=True), prompt, budget)
    assert judge.asked == [prompt.id]
