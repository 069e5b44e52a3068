"""Dense grids (4xN): generated into a gallery with their prompts, never judged or scored."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from pytest_imagetime.cases.loading import load_case_file
from pytest_imagetime.sheet.prompts import GridError, dense_prompt, parse_grid
from tests.builders import case_dict, make_case, write_case_file


def _run(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    write_case_file(pytester.path / "k.yaml", [case_dict("kitchen-pour-water-1"),
                                               case_dict("kitchen-pour-water-2", variant=2)])
    return pytester.runpytest("k.yaml", "--imagetime-model=procedural", "--imagetime-size=256",
                              "--imagetime-judge=pixel", *extra)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_dense_grid_run_fills_a_gallery_and_scores_nothing(pytester: pytest.Pytester,
                                                             workers: list[str]) -> None:
    result = _run(pytester, "--imagetime-grid=4x6", "--imagetime-html=html", *workers)
    result.assert_outcomes(passed=2)
    run = pytester.path / "reports/procedural@grid4x6"
    result.stdout.fnmatch_lines([f"dense-grid gallery (qualitative, not scored): "
                                 f"{run / 'gallery.html'}"])
    assert not list(run.rglob("report.json")) and not (run / "pixel").exists()
    record = json.loads((run / "images/kitchen-pour-water-1.json").read_text())
    assert record["grid"] == [4, 6] and "pixel_metrics" not in record
    (case, _) = load_case_file(pytester.path / "k.yaml")
    assert record["prompt"] == dense_prompt(case, (4, 6))
    assert Image.open(run / "images/kitchen-pour-water-1.png").size == (256, 256)
    gallery = (run / "gallery.html").read_text()
    assert gallery.count("<figure") == 2 and 'src="images/kitchen-pour-water-2.png"' in gallery
    copy = (pytester.path / "html/gallery-procedural@grid4x6.html").read_text()
    assert 'src="../reports/procedural%40grid4x6/images/kitchen-pour-water-1.png"' in copy
    # Resumed: nothing drawn again.
    stamp = (run / "images/kitchen-pour-water-1.png").stat().st_mtime_ns
    _run(pytester, "--imagetime-grid=4x6").assert_outcomes(passed=2)
    assert (run / "images/kitchen-pour-water-1.png").stat().st_mtime_ns == stamp


def test_grid_option_errors(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--imagetime-grid=3x3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--imagetime-grid=3x3: '3x3' is not a supported grid; use one "
                                 "of 2x2, 4x2, 4x4, 4x6, 4x8*"])
    result = _run(pytester, "--imagetime-grid=4x2", "--imagetime-setting=scaffold",
                  "--imagetime-reference-model=procedural")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*dense grids are prompt-only*"])


def test_grid_parsing_and_prompts() -> None:
    assert parse_grid("2x2") == (2, 2) and parse_grid(" 4X8 ") == (4, 8)
    for bad in ("4", "axb", "4x3", "2x4"):
        with pytest.raises(GridError):
            parse_grid(bad)
    case = make_case()
    prompt = dense_prompt(case, (4, 2))
    assert "4 rows and 2 columns: 8 equal panels" in prompt
    for stage in ("t1", "t2", "t3", "t4"):
        assert case.states[stage] in prompt
