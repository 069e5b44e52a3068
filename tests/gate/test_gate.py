"""The regression gate: tolerances, floors, significance, known failures, compare."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.cli import main
from pytest_imagetime.gate.compare import GateSpecError, parse_thresholds
from pytest_imagetime.report.json_report import validate_report
from pytest_imagetime.rubric.facts import LEVEL_KEYS


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")
    shutil.copy(builtin_cases_dir() / "constraints.yaml", pytester.path / "constraints.yaml")


def _run(pytester: pytest.Pytester, model: str, *extra: str) -> pytest.RunResult:
    return pytester.runpytest("constraints.yaml", f"--imagetime-model={model}",
                              "--imagetime-size=128", *extra)


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    validate_report(report)
    return report


def test_threshold_parsing() -> None:
    assert parse_thresholds("l5:0.3, overall:0.2", "--x") == {"L5": 0.3, "overall": 0.2}
    for bad, message in [("L9:1", "not METRIC:NUMBER"), ("overall", "not METRIC:NUMBER"),
                         ("L1:much", "'much' in 'L1:much' is not a number"),
                         ("L1:11", "must lie within 0-10")]:
        with pytest.raises(GateSpecError, match=message):
            parse_thresholds(bad, "--imagetime-max-drop")




def test_a_drop_breaches_with_a_table_and_the_flipped_cases(pytester: pytest.Pytester) -> None:
    _run(pytester, "procedural", "--imagetime-baseline=base.json",
         "--imagetime-update-baseline").assert_outcomes(passed=24)
    assert _report(pytester.path / "base.json")["aggregate"]["passed"] == 24
    result = _run(pytester, "procedural:shuffled", "--imagetime-baseline=base.json",
                  "--imagetime-max-drop=overall:0.5,L5:1", "--imagetime-gate-significant")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*ImageTime gate*",
        "gate BREACHED: procedural:shuffled | pixel",
        "  metric*baseline*now*change*95% CI (paired)*verdict",
        "  overall*dropped *, significantly (95% CI of the paired change *; tolerance 0.5)",
        "  L5 * dropped *",
        "  newly failing (24): constraints-*",
    ])
    gate = _report(pytester.path / "reports/procedural-shuffled/pixel/report.json")["gate"]
    assert gate["breached"] and len(gate["newly_failing"]) == 24


def test_floors_and_a_passing_gate(pytester: pytest.Pytester) -> None:
    _run(pytester, "procedural", "--imagetime-baseline=base.json",
         "--imagetime-update-baseline")
    ok = _run(pytester, "procedural", "--imagetime-baseline=base.json",
              "--imagetime-max-drop=overall:0.1", "--imagetime-min=overall:9")
    assert ok.ret == pytest.ExitCode.OK
    ok.stdout.fnmatch_lines(["gate passed: procedural | pixel"])
    floor = _run(pytester, "procedural", "--imagetime-baseline=base.json",
                 "--imagetime-min=overall:9.99")
    assert floor.ret == pytest.ExitCode.TESTS_FAILED
    floor.stdout.fnmatch_lines(["  overall * is below the floor 9.99"])


def test_known_failures_are_xfail_and_fixes_show(pytester: pytest.Pytester) -> None:
    _run(pytester, "procedural:shuffled", "--imagetime-baseline=base.json",
         "--imagetime-update-baseline").assert_outcomes(failed=24)
    again = _run(pytester, "procedural:shuffled", "--imagetime-baseline=base.json")
    again.assert_outcomes(xfailed=24)
    assert again.ret == pytest.ExitCode.OK
    fixed = _run(pytester, "procedural", "--imagetime-baseline=base.json")
    fixed.assert_outcomes(xpassed=24)
    fixed.stdout.fnmatch_lines(["  newly passing (24): constraints-*"])


def test_another_judge_is_not_compared_unless_intended(pytester: pytest.Pytester) -> None:
    _run(pytester, "procedural", "--imagetime-baseline=base.json", "--imagetime-update-baseline")
    base = json.loads((pytester.path / "base.json").read_text())
    base["manifest"]["judge"]["config"]["judge_model"] = "other-judge/1"
    (pytester.path / "base.json").write_text(json.dumps(base))
    refused = _run(pytester, "procedural", "--imagetime-baseline=base.json")
    assert refused.ret == pytest.ExitCode.TESTS_FAILED
    refused.stdout.fnmatch_lines(["  not comparable: judge model 'other-judge/1' in the "
                                  "baseline, 'pixel-metrics/*' now*"])
    allowed = _run(pytester, "procedural", "--imagetime-baseline=base.json",
                   "--imagetime-allow-judge-change")
    assert allowed.ret == pytest.ExitCode.OK


def test_missing_baseline_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "procedural", "--imagetime-baseline=nope.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --imagetime-baseline=*nope.json: no readable baseline "
                                 "report at *nope.json for procedural | pixel "
                                 "(--imagetime-update-baseline writes one)"])
    bad = _run(pytester, "procedural", "--imagetime-max-drop=L9:1")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR


def test_compare_command_matches_the_plugin(pytester: pytest.Pytester,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _run(pytester, "procedural", "--imagetime-out=base")
    _run(pytester, "procedural:shuffled", "--imagetime-out=now")
    base = pytester.path / "base/procedural/pixel/report.json"
    now = pytester.path / "now/procedural-shuffled/pixel"
    assert main(["compare", str(base), str(now), "--max-drop", "overall:0.5"]) == 1
    out = capsys.readouterr().out
    assert "gate BREACHED" in out and "newly failing (24)" in out
    assert main(["compare", str(base), str(base)]) == 0
    assert main(["compare", str(base), str(now), "--max-drop", "X:1"]) == 2


def _sheets(pytester: pytest.Pytester, folder: str, model: str = "procedural") -> str:
    """A files: model directory holding the sheets of a procedural run."""
    out = f"draw-{folder}"
    _run(pytester, model, f"--imagetime-out={out}")
    shutil.copytree(pytester.path / out / model.replace(":", "-") / "images",
                    pytester.path / folder)
    return f"files:{folder}"


def test_a_new_checkpoint_under_a_new_spec_is_gated_on_the_last(
        pytester: pytest.Pytester) -> None:
    first, second = _sheets(pytester, "ckpt1"), _sheets(pytester, "ckpt2")
    _run(pytester, first, "--imagetime-baseline=baseline/",
         "--imagetime-update-baseline").assert_outcomes(passed=24)
    assert (pytester.path / "baseline/files-ckpt1/pixel/report.json").is_file()
    gated = _run(pytester, second, "--imagetime-baseline=baseline/",
                 "--imagetime-max-drop=overall:0.2")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(["gate passed: files:ckpt2 | pixel",
                                "  overall * +0.00 *  ok"])
    assert _report(pytester.path / "reports/files-ckpt2/pixel/report.json")["gate"][
        "breached"] is False
    # Promoting the candidate replaces the run it was gated on: one run of the judge stays.
    promoted = _run(pytester, second, "--imagetime-baseline=baseline/",
                    "--imagetime-update-baseline")
    promoted.stdout.fnmatch_lines(["baseline replaced: *files-ckpt1*report.json (removed)"])
    assert sorted(p.parent.parent.name for p in
                  (pytester.path / "baseline").glob("*/*/report.json")) == ["files-ckpt2"]
    broken = _run(pytester, "procedural:shuffled", "--imagetime-baseline=baseline/",
                  "--imagetime-max-drop=overall:0.2")
    assert broken.ret == pytest.ExitCode.TESTS_FAILED
    broken.stdout.fnmatch_lines(["gate BREACHED: procedural:shuffled | pixel"])


def test_several_candidate_baselines_are_listed_with_how_to_pick(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    for model in ("procedural", "procedural:copied"):
        _run(pytester, model, "--imagetime-out=baseline")
    _run(pytester, "procedural", "--imagetime-baseline=other",
         "--imagetime-update-baseline", "--imagetime-out=other")
    result = _run(pytester, "procedural:shuffled", "--imagetime-baseline=baseline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: --imagetime-baseline=*baseline: no baseline at *procedural-shuffled/pixel/"
        "report.json, and *baseline holds 2 runs of this judge and setting: procedural "
        "(*baseline/procedural/pixel/report.json); procedural:copied (*baseline/"
        "procedural-copied/pixel/report.json); pick one by naming its report "
        "(--imagetime-baseline=*baseline/procedural/pixel/report.json), or remove the runs "
        "that are not the baseline"])
    picked = _run(pytester, "procedural:shuffled",
                  "--imagetime-baseline=baseline/procedural-copied/pixel/report.json")
    picked.stdout.fnmatch_lines(["gate passed: procedural:shuffled | pixel"])
    # The command over stored runs finds a renamed checkpoint's baseline the same way.
    assert main(["compare", "other", "baseline/procedural-copied/pixel"]) == 0
    assert "gate passed" in capsys.readouterr().out
    assert main(["compare", "baseline", "reports"]) == 2
    assert "holds 2 runs of this judge" in capsys.readouterr().err


def test_a_baseline_of_another_judge_only_is_named(pytester: pytest.Pytester) -> None:
    pytester.makefile(".json", **{"baseline/procedural/vlm/report": json.dumps(
        {"manifest": {"model": {"spec": "procedural"}, "setting": "prompt-only"}})})
    result = _run(pytester, "procedural:copied", "--imagetime-baseline=baseline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --imagetime-baseline=*baseline: no readable baseline "
                                 "report at *procedural-copied/pixel/report.json for "
                                 "procedural:copied | pixel; it holds runs of other judges or "
                                 "settings only: procedural (vlm, prompt-only) "
                                 "(--imagetime-update-baseline writes one)"])


def test_limits_on_metrics_the_judge_does_not_score_are_not_measured(
        pytester: pytest.Pytester) -> None:
    # The README's gate example, on an identical re-run under the offline pixel judge.
    readme = ["--imagetime-baseline=baseline/", "--imagetime-max-drop=overall:0.2,L5:0.3",
              "--imagetime-min=L3:6.0", "--imagetime-gate-significant"]
    _run(pytester, "procedural", "--imagetime-baseline=baseline/",
         "--imagetime-update-baseline")
    again = _run(pytester, "procedural", *readme)
    assert again.ret == pytest.ExitCode.OK
    again.stdout.fnmatch_lines([
        "gate passed: procedural | pixel",
        "  L3 * - * - * - * -  not measured",
        "  L5 * +0.00 * ok",
        "  not measured by this judge, so not gated: L3"])
    gate = _report(pytester.path / "reports/procedural/pixel/report.json")["gate"]
    rows = {row["metric"]: row for row in gate["rows"]}
    assert not gate["breached"]
    assert rows["L3"]["measured"] is False and rows["L3"]["breach"] is None
    assert rows["overall"]["measured"] is True


def test_a_floor_with_no_judged_item_breaches() -> None:
    from pytest_imagetime.gate.compare import compare

    def report(status: str, overall: float | None) -> dict[str, Any]:
        tree = dict.fromkeys(("gate", *LEVEL_KEYS))
        return {"manifest": {"judge": {"name": "pixel", "config": {}}, "setting": "s"},
                "rubric_version": "r", "items": [{"case_id": "a", "status": status,
                                                   "overall": overall, "tree": tree}],
                "aggregate": {"overall": overall, "dims": {},
                              "tree": dict.fromkeys(("gate", *LEVEL_KEYS))}}

    failed = compare(report("passed", 7.0), report("error", None), {}, {"overall": 5.0})
    assert failed.breached
    assert failed.rows[0].breach == "no score now: no item was judged"
    both = compare(report("passed", None), report("passed", None), {"overall": 1.0}, {})
    assert not both.breached and both.rows[0].verdict == "not measured"
    lost = compare(report("passed", 7.0), report("passed", None), {"overall": 1.0}, {})
    assert lost.rows[0].breach == "no score now"
