"""The README's Slurm job array, submitted as written to a real Slurm (opt-in: --run-slurm).

Start a one-node Slurm on this machine as root with ``examples/shards/slurm-localhost.sh``,
then ``python -m pytest tests/plugin/test_slurm.py --run-slurm``. Without the option the test is
deselected (the header says so); with it, a missing Slurm fails it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cases.loading import builtin_cases_dir
from pytest_imagetime.report.json_report import validate_report

pytestmark = pytest.mark.slurm

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "shards"
MACHINE_FIELDS = ("run_dir", "image", "judgment", "generated", "judged", "generation_s",
                  "judge_s")


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    validate_report(report)
    return report


def _items(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in i.items() if k not in MACHINE_FIELDS} for i in report["items"]]


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode == 0, f"{' '.join(command)}: {done.stdout}\n{done.stderr}"
    return done.stdout.strip()


def test_the_readme_job_array_merges_into_the_unsharded_report(tmp_path: Path) -> None:
    if shutil.which("sbatch") is None or shutil.which("sinfo") is None:
        pytest.fail("no Slurm here: start one with examples/shards/slurm-localhost.sh (as root)")
    shutil.copy(EXAMPLES / "imagetime.sbatch", tmp_path / "imagetime.sbatch")
    shutil.copy(builtin_cases_dir() / "constraints.yaml", tmp_path / "constraints.yaml")
    # The tasks run this environment's pytest on one domain's cases (24), small sheets:
    # sbatch passes the environment on.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PYTEST_ADDOPTS": "constraints.yaml --imagetime-size=128 -p no:cacheprovider"}
    job = _run(["sbatch", "--parsable", "imagetime.sbatch"], tmp_path, env)
    # The merge step as the README gives it, waited for.
    _run(["sbatch", "--parsable", "--wait", f"--dependency=afterany:{job}",
          "--wrap=imagetime merge runs/shard-* -o runs/all"], tmp_path, env)
    logs = sorted(tmp_path.glob(f"imagetime-{job}_*.out"))
    assert len(logs) == 4, [p.name for p in tmp_path.iterdir()]
    for k, log in enumerate(logs, 1):
        assert "6 passed, 18 deselected" in log.read_text(), log.read_text()
        shard = _report(tmp_path / f"runs/shard-{k}/procedural/pixel/report.json")
        assert shard["manifest"]["shard_source"] == f"SLURM_ARRAY_TASK_ID={k} of 1-4"
    whole_env = {**env, "PYTEST_ADDOPTS": ""}
    _run([sys.executable, "-m", "pytest", "constraints.yaml", "--imagetime-model=procedural",
          "--imagetime-judge=pixel", "--imagetime-size=128", "--imagetime-out=runs/whole",
          "-p", "no:cacheprovider"], tmp_path, whole_env)
    merged = _report(tmp_path / "runs/all/procedural/pixel/report.json")
    whole = _report(tmp_path / "runs/whole/procedural/pixel/report.json")
    assert merged["coverage"]["complete"] and merged["coverage"]["cases"] == 24
    assert _items(merged) == _items(whole)
    assert merged["aggregate"] == whole["aggregate"]
    assert merged["manifest"]["cases"] == whole["manifest"]["cases"]
