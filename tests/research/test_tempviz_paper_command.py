"""``research/tempviz_paper/command.py``: the ``imagetime tempviz`` parser, its defaults and
the runner each subcommand names."""

from __future__ import annotations

import argparse
import importlib

import pytest

from pytest_imagetime.judges.base import JudgeOptions
from pytest_imagetime.research.tempviz_paper.choices import DEFAULT_SEED
from pytest_imagetime.research.tempviz_paper.command import RUNS, add_parser

SUBCOMMANDS = {"prf": ["h.csv", "m.csv"], "random": ["h.csv"], "pbs": ["h.csv", "s.csv"],
               "sweep": ["h.csv", "m.csv"], "judge": ["run", "--data", "d", "-o", "t.csv"],
               "vqa-questions": ["--data", "d", "-o", "q.jsonl"],
               "vqa-answer": ["run", "--questions", "q.jsonl", "-o", "t.csv"],
               "label-export": ["run", "--data", "d", "-o", "form"]}


def _parse(*words: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="imagetime")
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["tempviz", *words])


@pytest.mark.parametrize(("name", "words"), SUBCOMMANDS.items())
def test_each_subcommand_names_a_runner_in_runs(name: str, words: list[str]) -> None:
    args = _parse(name, *words)
    module, _, function = args.runner.partition(":")
    assert module == RUNS
    assert callable(getattr(importlib.import_module(module), function))
    assert args.tempviz_command == name


def test_the_label_tables_defaults() -> None:
    args = _parse("prf", "h.csv", "m.csv")
    assert (args.setting, args.column, args.json) == ("paper", None, False)
    args = _parse("random", "h.csv")
    assert (args.target, args.distribution, args.seed) == ("q2_and_q3", "uniform",
                                                           DEFAULT_SEED)
    args = _parse("pbs", "h.csv", "s.csv")
    assert (args.alpha, args.by_category, args.column) == (0.05, False, None)
    args = _parse("sweep", "h.csv", "m.csv")
    assert (args.column, args.thresholds) == ("fraction", None)


def test_the_endpoint_defaults_are_the_judges() -> None:
    defaults = JudgeOptions()
    args = _parse("judge", *SUBCOMMANDS["judge"])
    assert args.judge_model == defaults.model
    assert args.key_env == (defaults.key_env or "none")
    assert (args.concurrency, args.timeout, args.retries, args.reasks) == (
        defaults.concurrency, defaults.timeout_s, defaults.retries, defaults.reasks)
    assert (args.style, args.shots, args.base_url) == ("simple", None, None)


@pytest.mark.parametrize(("name", "kind"), [("judge", "file"), ("vqa-questions", "file"),
                                            ("vqa-answer", "file"), ("label-export", "folder")])
def test_the_image_runs_say_what_they_write(name: str, kind: str) -> None:
    assert _parse(name, *SUBCOMMANDS[name]).writes == ("out", kind)


def test_the_label_form_defaults() -> None:
    args = _parse("label-export", *SUBCOMMANDS["label-export"])
    assert (args.sample, args.seed, args.max_px, args.annotator) == (500, 0, 1024, None)


@pytest.mark.parametrize("words", [
    ["prf", "h.csv", "m.csv", "--setting", "nonsense"],
    ["random", "h.csv", "--distribution", "gaussian"],
    ["judge", "run", "--data", "d", "-o", "t.csv", "--style", "loud"],
    ["judge", "run", "-o", "t.csv"],
    ["vqa-answer", "run", "-o", "t.csv"],
    [],
])
def test_bad_words_are_refused(words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        _parse(*words)
    assert raised.value.code == 2
    assert "imagetime tempviz" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["judge", "vqa-questions", "vqa-answer"])
def test_the_asking_runs_take_prices_a_budget_and_a_store(name: str) -> None:
    args = _parse(name, *SUBCOMMANDS[name])
    assert (args.price, args.prices, args.max_cost, args.store, args.no_store) == (
        None, None, None, None, False)
    args = _parse(name, *SUBCOMMANDS[name], "--price", "1,2,0.5", "--max-cost", "3",
                  "--store", "s")
    assert (args.price, args.max_cost, args.store) == ((1.0, 2.0, 0.5), 3.0, "s")
    assert _parse(name, *SUBCOMMANDS[name], "--no-store").no_store is True
