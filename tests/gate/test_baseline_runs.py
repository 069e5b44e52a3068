"""Which stored run a candidate is gated on: its own, else the one of its judge and setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_imagetime.gate.baseline_runs import (
    AmbiguousBaseline,
    StoredRun,
    baseline_report,
    judges_present,
    stored_runs,
)


def _run(folder: Path, model_dir: str, judge_dir: str, spec: str,
         setting: str = "prompt-only") -> Path:
    path = folder / model_dir / judge_dir / "report.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"manifest": {"model": {"spec": spec}, "setting": setting}}))
    return path


def test_stored_runs_skip_what_is_not_a_report_of_this_plugin(tmp_path: Path) -> None:
    first = _run(tmp_path, "a", "pixel", "files:a")
    second = _run(tmp_path, "b", "vlm", "files:b", "scaffold")
    for name, text in (("c", "[]"), ("d", "{broken"), ("e", '{"manifest": {}}'),
                       ("f", '{"manifest": 3}')):
        (tmp_path / name / "pixel").mkdir(parents=True)
        (tmp_path / name / "pixel" / "report.json").write_text(text)
    assert stored_runs(tmp_path) == [StoredRun(first, "files:a", "pixel", "prompt-only"),
                                     StoredRun(second, "files:b", "vlm", "scaffold")]
    assert judges_present(tmp_path) == ["files:a (pixel, prompt-only)",
                                        "files:b (vlm, scaffold)"]


def test_the_run_under_the_candidates_own_name_wins(tmp_path: Path) -> None:
    own = _run(tmp_path, "ckpt2", "pixel", "files:ckpt2")
    _run(tmp_path, "ckpt1", "pixel", "files:ckpt1")
    assert baseline_report(tmp_path, Path("ckpt2/pixel"), "prompt-only") == own


def test_the_one_run_of_the_same_judge_and_setting_is_taken(tmp_path: Path) -> None:
    earlier = _run(tmp_path, "ckpt1", "pixel", "files:ckpt1")
    _run(tmp_path, "other", "vlm", "files:other")
    _run(tmp_path, "scaffolded", "pixel", "files:s", "scaffold")
    assert baseline_report(tmp_path, Path("ckpt2/pixel"), "prompt-only") == earlier
    assert baseline_report(tmp_path, Path("ckpt2/chain"), "prompt-only") is None
    assert baseline_report(tmp_path / "empty", Path("ckpt2/pixel"), "prompt-only") is None


def test_several_candidates_are_ambiguous_and_say_how_to_pick(tmp_path: Path) -> None:
    one = _run(tmp_path, "ckpt0", "pixel", "files:ckpt0")
    two = _run(tmp_path, "ckpt1", "pixel", "files:ckpt1")
    with pytest.raises(AmbiguousBaseline) as raised:
        baseline_report(tmp_path, Path("ckpt2/pixel"), "prompt-only")
    error = raised.value
    assert [run.report for run in error.runs] == [one, two]
    assert str(error) == (
        f"no baseline at {tmp_path / 'ckpt2/pixel/report.json'}, and {tmp_path} holds 2 runs "
        f"of this judge and setting: files:ckpt0 ({one}); files:ckpt1 ({two})")
    assert error.how_to_pick("--imagetime-baseline={report}") == (
        f"pick one by naming its report (--imagetime-baseline={one}), or remove the runs that "
        "are not the baseline")
