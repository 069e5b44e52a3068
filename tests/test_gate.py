"""The regression gate: tolerances, floors, significance, known failures, compare."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cases import builtin_cases_dir
from pytest_imagetime.cli import main
from pytest_imagetime.gate import GateSpecError, paired_bootstrap, parse_thresholds
from pytest_imagetime.report.json_report import validate_report


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


def test_paired_bootstrap_brackets_the_change() -> None:
    base = [{"case_id": f"c{i}", "status": "passed", "overall": 8.0 + (i % 3) * 0.1}
            for i in range(30)]
    now = [{"case_id": f"c{i}", "status": "passed",
            "overall": 7.0 + (i % 3) * 0.1 + (0.5 if i % 2 else -0.5)} for i in range(30)]
    ci = paired_bootstrap(base, now, "overall")
    assert ci is not None
    low, high, pairs = ci
    assert low < -1.0 < high and high < 0 and pairs == 30
    errors = [dict(item, status="error") for item in now]
    assert paired_bootstrap(base, errors, "overall") is None


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
                                 "report at *nope.json (--imagetime-update-baseline writes one)"])
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
