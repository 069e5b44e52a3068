"""``imagetime baseline``: its refusals before any model is loaded, and what it leaves out.
(Scores from tiny real models: tests/research/test_baselines.py.)"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.research.baselines import runs
from pytest_imagetime.research.baselines.command import add_parser
from pytest_imagetime.research.baselines.runs import COLUMNS, run


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="imagetime")
    add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["baseline", *argv])


def test_both_metrics_parse_with_their_defaults() -> None:
    clip = _args("clipscore", "out")
    assert (clip.metric, clip.runs, clip.batch_size) == ("clipscore", ["out"], 8)
    assert clip.runner == "pytest_imagetime.research.baselines.runs:run"
    caption = _args("caption", "a", "b", "--batch-size", "2", "-o", "t.csv")
    assert (caption.runs, caption.batch_size, caption.out) == (["a", "b"], 2, "t.csv")
    assert COLUMNS["clipscore"][:3] == COLUMNS["caption"][:3] == ("model", "case_id", "score")


def test_a_batch_size_below_one_is_refused(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert run(_args("clipscore", str(tmp_path), "--batch-size", "0")) == 2
    assert capsys.readouterr().err.strip() == ("imagetime baseline: --batch-size must be at "
                                               "least 1")


def test_a_folder_without_images_is_named(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m" / "images").mkdir(parents=True)
    assert run(_args("clipscore", str(tmp_path / "m"))) == 2
    assert capsys.readouterr().err.strip() == (
        f"imagetime baseline: no images (images/*.png) in {tmp_path / 'm'}")


def test_images_without_prompts_are_listed_and_nothing_is_scored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    images = tmp_path / "m" / "images"
    images.mkdir(parents=True)
    for n in range(7):
        Image.new("RGB", (2, 2)).save(images / f"nowhere-{n}.png")
    cases = tmp_path / "cases"
    cases.mkdir()
    assert run(_args("caption", str(tmp_path / "m"), "--cases", str(cases))) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("imagetime baseline: 7 images left out: no prompt in the record, "
                      "--prompts or --cases: m/nowhere-0, m/nowhere-1, m/nowhere-2, "
                      "m/nowhere-3, m/nowhere-4, ...")
    assert err[1] == "imagetime baseline: no image left to score"


def test_rows_are_written_with_their_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    images = tmp_path / "m" / "images"
    images.mkdir(parents=True)
    for name in ("a", "b"):
        Image.new("RGB", (2, 2)).save(images / f"{name}.png")
        (images / f"{name}.json").write_text(json.dumps({"model": "m", "prompt": name * 3}))

    def fake(args: argparse.Namespace) -> tuple[runs.ScoreChunk, object]:
        return (lambda imgs, prompts: [{"score": str(len(p)), "cosine": "0.1"}
                                       for p in prompts]), (lambda prompts: 1)

    monkeypatch.setattr(runs, "_clipscore", fake)
    out = tmp_path / "table.csv"
    assert run(_args("clipscore", str(tmp_path / "m"), "-o", str(out))) == 0
    assert out.read_text().splitlines() == ["model,case_id,score,cosine", "m,a,3,0.1",
                                            "m,b,3,0.1"]
    captured = capsys.readouterr()
    assert captured.out.strip() == f"wrote {out}: 2 images, clipscore mean 3.000"
    assert captured.err.strip() == ("imagetime baseline: 1 prompt is longer than CLIP's 77 "
                                    "tokens: only the opening tokens were read")
    assert run(_args("clipscore", str(tmp_path / "m"), "--json")) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["n"], printed["mean"], printed["models"], printed["table"]) == (
        2, 3.0, ["m"], None)
