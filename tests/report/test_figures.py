"""The figures: files, sizes, determinism, nulls kept apart from zeros, box statistics."""

from __future__ import annotations

import json
import math
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from PIL import Image

from pytest_imagetime.engine.record import ItemRecord
from pytest_imagetime.report.coverage import Suite, coverage_json
from pytest_imagetime.report.figures import (
    DPI,
    FIGURES,
    INSTALL_HINT,
    PALETTE,
    RADAR_DIMS,
    SIZES,
    box_stats,
    build_figures,
    cost_per_sheet,
    dim_means,
    generation_cost,
    has_generation_cost,
    has_judge_cost,
    heatmap_data,
    priced_by_gpu_time,
    run_labels,
    sheet_points,
    write_figures,
)
from pytest_imagetime.report.json_report import build_report, validate_report
from pytest_imagetime.rubric.facts import ALL_DIMS
from pytest_imagetime.scoring.item import score_item
from tests.builders import case_dict, write_case_file

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PIXEL_DIMS = ("C0", "D0", "D3", "D5", "D9", "D14")
WITHOUT_COST = [name for name in FIGURES if "cost" not in name]


# ---------------------------------------------------------------- reports built in code


def _record(model: str, case_id: str, domain: str, scores: Mapping[str, int | None],
            status: str = "passed", cost: float = 0.0,
            generation_cost: float | None = None) -> ItemRecord:
    judged = status != "error"
    full = {d: scores.get(d) if judged else None for d in ALL_DIMS}
    item = score_item(full)
    return ItemRecord(
        key=f"{case_id}[{model}]", case_id=case_id, case_file=f"{domain.lower()}.yaml",
        domain=domain, subcategory="s", concept="c", difficulty="easy", variant=1,
        probed_levels=("L0",), constraint=False, model=model, judge="pixel", setting="prompt-only",
        run_dir="run", status=status, error=None if judged else "the judge gave up",
        scores=full, c_mean=item.c_mean, d_mean=item.d_mean, overall=item.overall,
        tree=item.tree, gate_pass=item.gate_pass if judged else None, cost_usd=cost,
        generation_cost_usd=generation_cost, judged=True)


def _report(model: str, records: list[ItemRecord], judge: str = "pixel",
            judge_model: str = "pixel-metrics/2", setting: str = "prompt-only"
            ) -> dict[str, Any]:
    manifest = {"model": {"spec": model, "config": {}},
                "judge": {"name": judge, "config": {"judge_model": judge_model}},
                "setting": setting, "size": 128, "seed": 0, "pass_threshold": 5.0,
                "cases": {"n": len(records), "sha256": "0" * 64}}
    report = build_report(manifest, records, "2026-01-01T00:00:00+00:00")
    suite = Suite("figures", {i["case_id"]: i["case_sha256"] for i in report["items"]})
    report["coverage"] = coverage_json(report["items"], suite, None, len(report["items"]))
    validate_report(report)
    return report


def _full(value: int) -> dict[str, int | None]:
    """Every dimension scored except the scaffold-only C1 and the occlusion D12."""
    return {d: (None if d in ("C1", "D12") else value) for d in ALL_DIMS}


def _pixel(c0: int, d9: int) -> dict[str, int | None]:
    return {"C0": c0, "D0": 10, "D3": 9, "D5": 8, "D9": d9, "D14": 7}


@pytest.fixture(scope="module")
def reports() -> list[dict[str, Any]]:
    """A fully scored model over two domains (one error), a pixel-judged one over one domain
    whose D9 is a real 0, and one whose every item is an error."""
    full = _report("alpha", [
        _record("alpha", "kitchen-1", "Kitchen", _full(8)),
        _record("alpha", "kitchen-2", "Kitchen", _full(6)),
        _record("alpha", "nature-1", "Nature", _full(4), status="failed"),
        _record("alpha", "nature-2", "Nature", {}, status="error"),
    ])
    pixel = _report("beta", [
        _record("beta", "kitchen-1", "Kitchen", _pixel(3, 0), status="failed"),
        _record("beta", "kitchen-2", "Kitchen", _pixel(5, 0)),
    ])
    broken = _report("delta", [_record("delta", "garden-1", "Garden", {}, status="error")])
    return [full, pixel, broken]


@pytest.fixture(scope="module")
def figures(reports: list[dict[str, Any]]) -> dict[str, Figure]:
    return build_figures(reports)


@pytest.fixture(scope="module")
def written(reports: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
            ) -> list[Path]:
    return write_figures(reports, tmp_path_factory.mktemp("figures"))


def _gid(fig: Figure, gid: str) -> list[Any]:
    return list(fig.findobj(lambda artist: artist.get_gid() == gid))


# ---------------------------------------------------------------- files


def _svg_ids(path: Path) -> set[str]:
    return {e.attrib["id"] for e in ET.parse(path).getroot().iter() if "id" in e.attrib}


def test_every_figure_is_written_as_png_and_svg_at_its_size(written: list[Path]) -> None:
    assert [p.name for p in written] == [f"{n}.{ext}" for n in WITHOUT_COST
                                         for ext in ("png", "svg")]
    out = written[0].parent
    for name in WITHOUT_COST:
        width, height = SIZES[name]
        with Image.open(out / f"{name}.png") as image:
            assert image.format == "PNG"
            assert image.size == (round(width * DPI), round(height * DPI))
        svg = (out / f"{name}.svg").read_text()
        assert ET.fromstring(svg).tag.endswith("svg")
        assert "dc:date" not in svg


def test_same_reports_give_identical_files(reports: list[dict[str, Any]], written: list[Path],
                                           tmp_path: Path) -> None:
    again = write_figures(reports, tmp_path)
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in written]


def test_no_reports_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no reports"):
        write_figures([], tmp_path)


def test_without_matplotlib_the_error_names_the_install_command(
        reports: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=re.escape(INSTALL_HINT)):
        write_figures(reports, tmp_path / "figures")
    assert INSTALL_HINT == "pip install 'pytest-imagetime[figures]'"
    assert not (tmp_path / "figures").exists()


# ---------------------------------------------------------------- nulls are not zeros


def test_dimension_means_keep_nulls(reports: list[dict[str, Any]]) -> None:
    full, pixel, broken = reports
    assert dim_means(full, ("C0", "C1", "D12")) == [6.0, None, None]
    assert dim_means(pixel, ("C0", "C2", "D9")) == [4.0, None, 0.0]
    assert dim_means(broken, ("C0", "D0")) == [None, None]


def test_unscored_dimension_has_no_bar_and_a_zero_mean_has_one(
        figures: dict[str, Figure], written: list[Path]) -> None:
    fig = figures["d_bars"]
    assert not _gid(fig, "bar-D12-run0") and not _gid(fig, "bar-D1-run1")
    (zero,) = _gid(fig, "bar-D9-run1")
    assert zero.get_height() == 0.0
    assert len(_gid(fig, "bar-D1-run0")) == 1
    bars = [a for a in fig.findobj() if str(a.get_gid()).startswith("bar-")]
    assert len(bars) == 14 + 5  # alpha: D0-D14 but D12; beta: the pixel judge's five D dims
    ids = _svg_ids(written[0].parent / "d_bars.svg")
    assert {"bar-D9-run1", "bar-D0-run0"} <= ids
    assert not {i for i in ids if re.fullmatch(r"bar-(D12-run\d|D1-run1|D\d+-run2)", i)}


def test_unscored_tree_level_has_no_bar(figures: dict[str, Figure]) -> None:
    fig = figures["tree_levels"]
    # beta's pixel scores reach the gate, L0-L2 and L5 (through D9); L3, L4 and L6 are null.
    assert [k for k in ("gate", "L0", "L3", "L4", "L5", "L6")
            if _gid(fig, f"bar-{k}-run1")] == ["gate", "L0", "L5"]
    assert len(_gid(fig, "bar-L6-run0")) == 1


def test_radar_leaves_a_gap_for_null_dimensions(figures: dict[str, Figure]) -> None:
    fig = figures["c_radar"]
    (line,) = _gid(fig, "radar-run1")
    ys = np.asarray(line.get_ydata(), dtype=float)[:len(RADAR_DIMS)]
    assert ys[RADAR_DIMS.index("C0")] == 4.0
    assert np.isnan(ys[[RADAR_DIMS.index(d) for d in RADAR_DIMS if d != "C0"]]).all()
    assert "C1" not in RADAR_DIMS


def test_each_run_keeps_its_colour_across_figures(figures: dict[str, Figure]) -> None:
    from matplotlib.colors import to_hex

    for index in (0, 1):
        (bar,) = _gid(figures["d_bars"], f"bar-D0-run{index}")
        (line,) = _gid(figures["c_radar"], f"radar-run{index}")
        assert to_hex(bar.get_facecolor()) == to_hex(line.get_color()) == PALETTE[index]


# ---------------------------------------------------------------- the box


def test_box_whiskers_are_the_5th_and_95th_percentiles() -> None:
    stats = box_stats([float(v) for v in range(101)])
    assert stats is not None
    assert (stats.p5, stats.q1, stats.median, stats.q3, stats.p95) == (5, 25, 50, 75, 95)
    assert stats.mean == 50 and stats.n == 101
    assert stats.outliers == (0, 1, 2, 3, 4, 96, 97, 98, 99, 100)
    small = box_stats([2.0, 4.0, 4.0, 10.0])
    assert small is not None
    # Linear interpolation: the 5th percentile lies 0.15 of the way from 2 to 4.
    assert math.isclose(small.p5, 2.3) and math.isclose(small.p95, 9.1)
    assert small.median == 4.0 and small.mean == 5.0
    assert box_stats([]) is None


def test_box_figure_draws_those_whiskers(reports: list[dict[str, Any]],
                                        figures: dict[str, Figure]) -> None:
    ax = figures["overall_box"].axes[0]
    ys = {round(float(y), 6) for line in ax.lines
          for y in np.asarray(line.get_ydata(), dtype=float)}
    for report in reports[:2]:
        stats = box_stats([i["overall"] for i in report["items"] if i["overall"] is not None])
        assert stats is not None
        assert {round(stats.p5, 6), round(stats.p95, 6), round(stats.mean, 6)} <= ys
    # The run of errors has no box, and says so.
    assert [t.get_text() for t in ax.texts] == ["no scores"]
    assert ax.get_xticklabels()[2].get_text() == "delta\nn=0"


# ---------------------------------------------------------------- the heatmap


def test_heatmap_has_a_row_per_domain_and_none_where_missing(
        reports: list[dict[str, Any]]) -> None:
    domains, rows = heatmap_data(reports)
    # Garden has only an error: a row, all blank.
    assert domains == ["Garden", "Kitchen", "Nature"]
    assert rows == [[None, None, None], [7.0, pytest.approx(5.4), None], [4.0, None, None]]


def test_heatmap_cells_are_blank_where_missing(figures: dict[str, Figure]) -> None:
    ax = figures["domain_heatmap"].axes[0]
    grid = ax.images[0].get_array()
    assert grid is not None and grid.shape == (3, 3)
    assert np.ma.getmaskarray(grid).tolist() == [[True, True, True], [False, False, True],
                                                 [False, True, True]]
    assert sorted(t.get_text() for t in ax.texts) == ["4.0", "5.4", "7.0"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Garden", "Kitchen", "Nature"]


# ---------------------------------------------------------------- scatter, cost, labels


def test_sheet_points_leave_out_errors_and_half_scored_sheets() -> None:
    report = _report("gamma", [
        _record("gamma", "a", "Kitchen", _full(7)),
        _record("gamma", "b", "Kitchen", {"D0": 5}),  # no C score: no point
        _record("gamma", "c", "Kitchen", {}, status="error"),
    ])
    assert sheet_points(report) == [(7.0, 7.0)]


def test_judge_cost_figure_only_when_a_run_has_a_judge_cost(reports: list[dict[str, Any]],
                                                            figures: dict[str, Figure],
                                                            tmp_path: Path) -> None:
    assert not has_judge_cost(reports)
    assert "judge_cost_vs_overall" not in figures
    paid = _report("gamma", [_record("gamma", "a", "Kitchen", _full(7), cost=0.02),
                             _record("gamma", "b", "Kitchen", _full(5), cost=0.04)],
                   judge="vlm", judge_model="gpt-5.5")
    assert has_judge_cost([*reports, paid])
    assert cost_per_sheet(paid) == pytest.approx(0.03)
    written = write_figures([*reports, paid], tmp_path)
    assert [p.name for p in written[-2:]] == ["judge_cost_vs_overall.png",
                                              "judge_cost_vs_overall.svg"]
    assert "cost_vs_overall.png" not in [p.name for p in written]  # no generation cost
    with Image.open(written[-2]) as image:
        assert image.size == (round(SIZES["judge_cost_vs_overall"][0] * DPI),
                              round(SIZES["judge_cost_vs_overall"][1] * DPI))


def test_cost_figure_plots_the_reported_generation_cost(reports: list[dict[str, Any]]) -> None:
    """The paper's cost figure: the generation cost of a run's sheets on x, not the judge's."""
    assert not has_generation_cost(reports)
    hosted = _report("hosted", [
        _record("hosted", "a", "Kitchen", _full(8), cost=0.5, generation_cost=0.04),
        _record("hosted", "b", "Kitchen", _full(6), cost=0.5, generation_cost=0.06),
        _record("hosted", "c", "Kitchen", {}, status="error")])
    assert generation_cost(hosted) == pytest.approx(0.10)
    assert hosted["aggregate"]["generation_cost_n"] == 2
    figures = build_figures([*reports, hosted])
    ax = figures["cost_vs_overall"].axes[0]
    assert ax.get_xlabel() == "generation cost of the sheets (USD)"
    (point,) = [c for c in ax.collections if len(np.asarray(c.get_offsets()))]
    assert list(np.asarray(point.get_offsets())[0]) == pytest.approx([0.10, 7.0])
    judge_ax = figures["judge_cost_vs_overall"].axes[0]
    assert judge_ax.get_xlabel() == "judge cost per judged sheet (USD)"


def test_labels_name_setting_and_judge_only_when_needed(
        reports: list[dict[str, Any]]) -> None:
    assert run_labels(reports) == ["alpha", "beta", "delta"]
    scaffold = _report("alpha", [_record("alpha", "a", "Kitchen", _full(7))],
                       setting="scaffold")
    vlm = _report("alpha", [_record("alpha", "a", "Kitchen", _full(7))], judge="vlm",
                  judge_model="gpt-5.5")
    assert run_labels([*reports[:2], scaffold, vlm]) == [
        "alpha | pixel", "beta | pixel", "alpha@scaffold | pixel", "alpha | vlm"]
    other = _report("alpha", [_record("alpha", "a", "Kitchen", _full(7))], judge="vlm",
                    judge_model="gpt-4.1")
    assert run_labels([vlm, other]) == ["alpha | vlm gpt-5.5", "alpha | vlm gpt-4.1"]
    assert run_labels([reports[0], reports[0]]) == ["alpha #1", "alpha #2"]


# ---------------------------------------------------------------- real runs


@pytest.fixture
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline pixel judge for pytester runs (set after pytester clears PYTEST_ADDOPTS)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")


@pytest.mark.usefixtures("offline_judge")
def test_figures_of_real_runs(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [
        case_dict("kitchen-pour-water-1"),
        case_dict("kitchen-pour-water-2", variant=2,
                  setup={"scene": "a marble counter", "style": "flat illustration",
                         "camera": "top-down view"}),
    ])
    pytester.runpytest("kitchen.yaml", "--imagetime-model=procedural",
                       "--imagetime-model=procedural:copied", "--imagetime-size=128"
                       ).assert_outcomes(passed=2, failed=2)
    loaded = [json.loads(p.read_text())
              for p in sorted((pytester.path / "reports").rglob("report.json"))]
    for report in loaded:
        validate_report(report)
    assert run_labels(loaded) == ["procedural", "procedural:copied"]
    written = write_figures(loaded, pytester.path / "figures")
    assert {p.name for p in written} == {f"{n}.{e}" for n in WITHOUT_COST for e in ("png", "svg")}
    ids = _svg_ids(pytester.path / "figures" / "d_bars.svg")
    # The pixel judge scores D0, D3, D5, D9 and D14 only.
    assert {i.split("-")[1] for i in ids if i.startswith("bar-")} == {
        d for d in PIXEL_DIMS if d.startswith("D")}


def test_local_runs_are_priced_by_gpu_time_when_a_rate_is_given(
        reports: list[dict[str, Any]]) -> None:
    """Open models drawn locally report no cost: at a GPU-hour price their sheets' drawing
    seconds put them on the cost figure beside the hosted ones, marked as GPU-priced."""
    local = [replace(r, generation_s=s) for r, s in zip([
        _record("local", "a", "Kitchen", _full(6)),
        _record("local", "b", "Kitchen", _full(4))], (30.0, 42.0), strict=True)]
    local_report = _report("local", local)
    hosted = _report("hosted", [_record("hosted", "a", "Kitchen", _full(8),
                                        generation_cost=0.04)])
    assert generation_cost(local_report) is None
    assert not has_generation_cost([local_report])
    assert generation_cost(local_report, 2.5) == pytest.approx(72 * 2.5 / 3600)
    assert generation_cost(hosted, 2.5) == pytest.approx(0.04)  # reported wins
    assert priced_by_gpu_time(local_report, 2.5) and not priced_by_gpu_time(hosted, 2.5)
    assert "cost_vs_overall" not in build_figures([*reports, local_report])
    figure = build_figures([local_report, hosted], gpu_usd_per_hour=2.5)["cost_vs_overall"]
    ax = figure.axes[0]
    labels = sorted(t.get_text() for t in ax.texts)
    assert labels == ["hosted", "local (GPU)"]
    points = sorted(tuple(np.asarray(c.get_offsets())[0]) for c in ax.collections
                    if len(np.asarray(c.get_offsets())))
    assert points[0] == pytest.approx((0.04, 8.0)) and points[1] == pytest.approx((0.05, 5.0))
    assert "at 2.5 USD per GPU hour" in ax.get_title()
