"""The recipes of docs/hooks.md run as written there: a run's scores logged to MLflow's local
file store (offline) through ``pytest_imagetime_update_report``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, write_case_file

DOC = Path(__file__).resolve().parents[2] / "docs" / "hooks.md"


def _recipe(module: str) -> str:
    """The python block of docs/hooks.md that imports ``module``."""
    blocks: list[str] = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if f"\nimport {module}\n" in b]
    return block


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_mlflow_recipe_logs_each_run_once(pytester: pytest.Pytester,
                                              monkeypatch: pytest.MonkeyPatch,
                                              workers: list[str]) -> None:
    # mlflow (a test requirement) is imported only by the run's subprocess: imported here it
    # would stay loaded in this process for the tests after this one.
    store = pytester.path / "mlruns"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store.as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    pytester.makeconftest(_recipe("mlflow"))
    write_case_file(pytester.path / "k.yaml", [case_dict(f"kitchen-pour-water-{n}", variant=n)
                                               for n in (1, 2)] +
                    [case_dict("kitchen-boil-water-1", concept="boil water", variant=1)])
    result = pytester.runpytest_subprocess("k.yaml", "--imagetime-model=procedural",
                                           "--imagetime-judge=pixel", "--imagetime-size=128",
                                           *workers)
    result.assert_outcomes(passed=3)
    (path,) = (pytester.path / "reports").rglob("report.json")
    report = json.loads(path.read_text())
    validate_report(report)
    run_id = report["extra"]["mlflow_run_id"]
    # MLflow's documented file-store layout: <experiment>/<run>/{params,metrics}/<name>.
    (run,) = [p for p in store.glob("*/*") if p.is_dir() and p.name not in ("0", ".trash")
              and (p / "metrics").is_dir()]
    assert run.name == run_id
    assert (run / "params" / "model").read_text() == "procedural"
    assert (run / "params" / "judge").read_text() == "pixel"
    assert (run / "params" / "variant").read_text() == "good"  # the model's config
    metrics = {m.name: float(m.read_text().split()[1]) for m in (run / "metrics").iterdir()}
    assert metrics["overall"] == pytest.approx(report["aggregate"]["overall"])
    assert metrics["items"] == 3 and metrics["errors"] == 0
    assert {f"tree.{k}" for k, v in report["aggregate"]["tree"].items() if v is not None} \
        <= set(metrics)
