"""The benchmark's figures, drawn from loaded ``report.json`` dicts (one per run).

Runs are shown side by side, each with one colour and marker in every figure. Null scores
are left out (no bar, no point, a gap in a line, a blank cell), never drawn as 0. matplotlib
is an optional dependency (the ``figures`` extra) and is imported only when figures are drawn.

Every figure is written as PNG and SVG with fixed sizes, the bundled DejaVu Sans font and no
dates in the metadata, so the same reports give the same files.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..rubric.facts import C_DIMS, D_DIMS, GATE, LEVEL_KEYS, LEVEL_NAMES
from .coverage import coverage_text, is_complete

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure
    from matplotlib.projections.polar import PolarAxes

INSTALL_HINT = "pip install 'pytest-imagetime[figures]'"
DPI = 150
# C1 (reference grounding) is scored in the scaffold setting only; leaving it out lets runs
# of both settings share one radar.
RADAR_DIMS: tuple[str, ...] = tuple(d for d in C_DIMS if d != "C1")
TREE_AXIS: tuple[str, ...] = (GATE.key, *LEVEL_KEYS)
TREE_NAMES: dict[str, str] = {GATE.key: GATE.name, **LEVEL_NAMES}
# Width and height in inches; the PNG is DPI times larger in pixels.
SIZES: dict[str, tuple[float, float]] = {
    "c_radar": (9.0, 8.0),
    "d_bars": (14.0, 6.4),
    "tree_levels": (11.0, 6.0),
    "overall_box": (10.0, 6.0),
    "domain_heatmap": (10.0, 9.0),
    "c_vs_d": (8.4, 8.4),
    "cost_vs_overall": (9.0, 6.4),
    "judge_cost_vs_overall": (9.0, 6.4),
}
# tab10, then its lighter companions from tab20: distinct for up to 20 runs.
PALETTE: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5",
    "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)
MARKERS: tuple[str, ...] = ("o", "s", "^", "D", "v", "P", "X", "*")
MUTED = "0.55"
NULL_NOTE = "nulls are left out, never drawn as 0"


# ---------------------------------------------------------------- runs and their data


@dataclass(frozen=True)
class Run:
    """One report as the figures show it."""

    index: int  # position among the runs: names its elements in the SVG
    label: str
    colour: str
    marker: str
    report: Mapping[str, Any]

    @property
    def aggregate(self) -> Mapping[str, Any]:
        agg: Mapping[str, Any] = self.report["aggregate"]
        return agg


def _judge_ids(reports: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    judges = [r["manifest"]["judge"] for r in reports]
    return [(str(j["name"]), str(j["config"].get("judge_model", ""))) for j in judges]


def run_labels(reports: Sequence[Mapping[str, Any]]) -> list[str]:
    """Model spec, "@setting" outside prompt-only, "| judge" when the runs' judges differ, and
    the cases covered for a partial run."""
    judges = _judge_ids(reports)
    by_name = len({name for name, _ in judges}) == len(set(judges))
    labels = []
    for report, (name, model) in zip(reports, judges, strict=True):
        manifest = report["manifest"]
        label = str(manifest["model"]["spec"])
        if manifest["setting"] != "prompt-only":
            label += f"@{manifest['setting']}"
        if len(set(judges)) > 1:
            label += f" | {name}" if by_name else f" | {name} {model}".rstrip()
        if not is_complete(report):  # a subset's means are never shown as the benchmark's
            label += f" ({coverage_text(report)})"
        labels.append(label)
    return _unique(labels)


def _unique(labels: list[str]) -> list[str]:
    # Two runs of one model and judge (another size, say) still need telling apart.
    total = Counter(labels)
    seen: Counter[str] = Counter()
    out = []
    for label in labels:
        seen[label] += 1
        out.append(label if total[label] == 1 else f"{label} #{seen[label]}")
    return out


def make_runs(reports: Sequence[Mapping[str, Any]]) -> list[Run]:
    labels = run_labels(reports)
    return [Run(i, label, PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)], report)
            for i, (label, report) in enumerate(zip(labels, reports, strict=True))]


def _number(value: object) -> float | None:
    return None if value is None else float(str(value))


def dim_means(report: Mapping[str, Any], dims: Sequence[str]) -> list[float | None]:
    found: Mapping[str, Any] = report["aggregate"]["dims"]
    return [_number(found[d]["mean"]) if d in found else None for d in dims]


def tree_means(report: Mapping[str, Any]) -> list[float | None]:
    tree: Mapping[str, Any] = report["aggregate"]["tree"]
    return [_number(tree.get(k)) for k in TREE_AXIS]


def _judged_items(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [i for i in report["items"] if i["status"] != "error"]


def item_overalls(report: Mapping[str, Any]) -> list[float]:
    return [float(i["overall"]) for i in _judged_items(report) if i["overall"] is not None]


def sheet_points(report: Mapping[str, Any]) -> list[tuple[float, float]]:
    """(C mean, D mean) of every judged sheet that has both."""
    return [(float(i["c_mean"]), float(i["d_mean"])) for i in _judged_items(report)
            if i["c_mean"] is not None and i["d_mean"] is not None]


@dataclass(frozen=True)
class BoxStats:
    """A box: interquartile range, median, whiskers at the 5th and 95th percentiles, mean."""

    n: int
    p5: float
    q1: float
    median: float
    q3: float
    p95: float
    mean: float
    outliers: tuple[float, ...]  # values beyond the whiskers

    def as_bxp(self, label: str) -> dict[str, Any]:
        return {"label": label, "whislo": self.p5, "q1": self.q1, "med": self.median,
                "q3": self.q3, "whishi": self.p95, "mean": self.mean,
                "fliers": list(self.outliers)}


def box_stats(values: Sequence[float]) -> BoxStats | None:
    """Percentiles by linear interpolation (numpy's default); None without values."""
    if not values:
        return None
    data = np.asarray(values, dtype=float)
    p5, q1, median, q3, p95 = (float(v) for v in np.percentile(data, [5, 25, 50, 75, 95]))
    outliers = tuple(float(v) for v in np.sort(data) if v < p5 or v > p95)
    return BoxStats(len(data), p5, q1, median, q3, p95, math.fsum(values) / len(values),
                    outliers)


def heatmap_data(reports: Sequence[Mapping[str, Any]]
                 ) -> tuple[list[str], list[list[float | None]]]:
    """Every domain of any report (sorted), and its Overall per run; None where missing."""
    domains = sorted({d for r in reports for d in r["aggregate"]["by_domain"]})
    rows = []
    for domain in domains:
        row = []
        for report in reports:
            summary = report["aggregate"]["by_domain"].get(domain)
            row.append(None if summary is None else _number(summary["overall"]))
        rows.append(row)
    return domains, rows


def has_judge_cost(reports: Sequence[Mapping[str, Any]]) -> bool:
    return any(float(r["aggregate"]["cost_usd"] or 0) > 0 for r in reports)


def has_generation_cost(reports: Sequence[Mapping[str, Any]],
                        gpu_usd_per_hour: float | None = None) -> bool:
    return any(generation_cost(r, gpu_usd_per_hour) is not None for r in reports)


def generation_cost(report: Mapping[str, Any],
                    gpu_usd_per_hour: float | None = None) -> float | None:
    """The image backend's reported cost of the run's sheets (USD); for a run that reported
    none (local backends), the seconds its sheets took to draw at ``gpu_usd_per_hour`` when
    given; else None."""
    value = report["aggregate"].get("generation_cost_usd")
    if value is not None:
        return float(value)
    seconds = gpu_seconds(report)
    return None if gpu_usd_per_hour is None or seconds is None \
        else seconds * gpu_usd_per_hour / 3600


def gpu_seconds(report: Mapping[str, Any]) -> float | None:
    """The drawing seconds of the run's sheets (each sheet's share of its batch), None when
    no item has them."""
    seconds = [float(i["generation_s"]) for i in report["items"]
               if i.get("generation_s") is not None]
    return math.fsum(seconds) if seconds else None


def priced_by_gpu_time(report: Mapping[str, Any], gpu_usd_per_hour: float | None) -> bool:
    return report["aggregate"].get("generation_cost_usd") is None \
        and generation_cost(report, gpu_usd_per_hour) is not None


def cost_per_sheet(report: Mapping[str, Any]) -> float | None:
    agg = report["aggregate"]
    if agg["cost_usd"] is None or not agg["judged"]:
        return None  # unknown, or nothing judged
    return float(agg["cost_usd"]) / int(agg["judged"])


# ---------------------------------------------------------------- drawing helpers


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"ImageTime figures need matplotlib: {INSTALL_HINT}") from exc


@contextmanager
def _style() -> Iterator[None]:
    import matplotlib

    with matplotlib.rc_context({
        "font.family": "DejaVu Sans",  # bundled with matplotlib: same glyphs everywhere
        "font.size": 11,
        "axes.titlesize": 11,
        "axes.labelsize": 11,
        "figure.titlesize": 14,
        "legend.fontsize": 10,
        "svg.fonttype": "none",  # text stays text: searchable, smaller files
        "svg.hashsalt": "imagetime",  # element ids stable between runs
        "axes.spines.top": False,
        "axes.spines.right": False,
    }):
        yield


def _new_figure(name: str, title: str, subtitle: str, polar: bool = False
                ) -> tuple[Figure, Axes]:
    # A Figure with its own Agg canvas: no pyplot state, the caller's backend untouched.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZES[name], dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(projection="polar" if polar else None)
    fig.suptitle(title, fontweight="bold")
    ax.set_title(subtitle, color="0.3", fontsize=10, pad=14 if polar else 6)
    return fig, ax


def _legend(fig: Figure, runs: Sequence[Run], line: bool = False) -> None:
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=r.colour, marker=r.marker, markersize=8,
                      linestyle="-" if line else "") for r in runs]
    fig.legend(handles, [r.label for r in runs], loc="outside lower center",
               ncols=_legend_columns(fig, runs), frameon=False)


def _bar_legend(fig: Figure, runs: Sequence[Run]) -> None:
    from matplotlib.patches import Patch

    fig.legend([Patch(facecolor=r.colour) for r in runs], [r.label for r in runs],
               loc="outside lower center", ncols=_legend_columns(fig, runs), frameon=False)


def _legend_columns(fig: Figure, runs: Sequence[Run]) -> int:
    # As many columns as the longest label lets fit in the fixed figure width.
    entry_in = 0.6 + 0.085 * max(len(r.label) for r in runs)
    return max(1, min(len(runs), 4, int(fig.get_figwidth() / entry_in)))


def _axis_label(key: str, name: str, scored: bool, width: int) -> str:
    text = textwrap.fill(name, width, break_long_words=False)
    return f"{key}\n{text}" + ("" if scored else "\n(no scores)")


def _mute_unscored(labels: Sequence[Any], scored: Sequence[bool]) -> None:
    for label, ok in zip(labels, scored, strict=True):
        if not ok:
            label.set_color(MUTED)


def _any_scored(values: Sequence[Sequence[float | None]], count: int) -> list[bool]:
    return [any(v[k] is not None for v in values) for k in range(count)]


# ---------------------------------------------------------------- the figures


def _c_radar(runs: Sequence[Run]) -> Figure:
    fig, axes = _new_figure("c_radar", "Capability scores per model",
                            f"mean C score over judged sheets (C1 is scaffold-only); {NULL_NOTE}",
                            polar=True)
    ax = cast("PolarAxes", axes)
    values = [dim_means(r.report, RADAR_DIMS) for r in runs]
    scored = _any_scored(values, len(RADAR_DIMS))
    angles = np.linspace(0, 2 * np.pi, len(RADAR_DIMS), endpoint=False)
    closed = np.append(angles, angles[0])
    for run, row in zip(runs, values, strict=True):
        # NaN breaks the line, so a null dimension is a gap, not a dip to the centre.
        ys = np.array([math.nan if v is None else v for v in row], dtype=float)
        ax.plot(closed, np.append(ys, ys[0]), color=run.colour, marker=run.marker,
                linewidth=2, markersize=7, clip_on=False, gid=f"radar-run{run.index}")
        if not np.isnan(ys).any():
            ax.fill(closed, np.append(ys, ys[0]), color=run.colour, alpha=0.08)
    ax.set_theta_offset(np.pi / 2)
    ax.set_theta_direction(-1)
    ax.set_xticks(angles)
    ax.set_xticklabels([_axis_label(d, C_DIMS[d], ok, 16)
                        for d, ok in zip(RADAR_DIMS, scored, strict=True)], fontsize=9)
    _mute_unscored(ax.get_xticklabels(), scored)
    ax.tick_params(axis="x", pad=16)
    ax.set_ylim(0, 10)
    ax.set_yticks([2, 4, 6, 8, 10])
    ax.set_yticklabels(["2", "4", "6", "8", "10"], color="0.4", fontsize=8)
    _legend(fig, runs, line=True)
    return fig


def _grouped_bars(ax: Axes, runs: Sequence[Run], keys: Sequence[str],
                  values: Sequence[Sequence[float | None]]) -> None:
    width = 0.8 / len(runs)
    for i, (run, row) in enumerate(zip(runs, values, strict=True)):
        offset = (i - (len(runs) - 1) / 2) * width
        present = [(j, v) for j, v in enumerate(row) if v is not None]
        bars = ax.bar([j + offset for j, _ in present], [v for _, v in present], width,
                      color=run.colour, edgecolor="white", linewidth=0.5)
        for patch, (j, value) in zip(bars.patches, present, strict=True):
            patch.set_gid(f"bar-{keys[j]}-run{run.index}")
            if value < 0.05:
                # A zero bar has no height: label it, or it would read as a null.
                ax.text(j + offset, 0.08, "0", ha="center", va="bottom", fontsize=8,
                        fontweight="bold", color=run.colour)
    ax.set_xticks(range(len(keys)))
    ax.set_xlim(-0.6, len(keys) - 0.4)
    ax.set_ylim(0, 10.4)
    ax.set_yticks(range(0, 11, 2))
    ax.grid(axis="y", color="0.9")
    ax.set_axisbelow(True)


def _d_bars(runs: Sequence[Run]) -> Figure:
    fig, ax = _new_figure("d_bars", "Diagnostic scores per model",
                          f"mean D score over judged sheets; no bar = no score ({NULL_NOTE})")
    keys = tuple(D_DIMS)
    values = [dim_means(r.report, keys) for r in runs]
    scored = _any_scored(values, len(keys))
    _grouped_bars(ax, runs, keys, values)
    ax.set_xticklabels([_axis_label(d, D_DIMS[d], ok, 13)
                        for d, ok in zip(keys, scored, strict=True)], fontsize=8)
    _mute_unscored(ax.get_xticklabels(), scored)
    ax.set_ylabel("mean score (0-10)")
    _bar_legend(fig, runs)
    return fig


def _tree_levels(runs: Sequence[Run]) -> Figure:
    fig, ax = _new_figure("tree_levels", "Capability tree per model",
                          f"protocol node (C0, D0, D14) and levels L0-L6, mean over judged sheets; "
                          f"{NULL_NOTE}")
    values = [tree_means(r.report) for r in runs]
    scored = _any_scored(values, len(TREE_AXIS))
    _grouped_bars(ax, runs, TREE_AXIS, values)
    ax.set_xticklabels([_axis_label(k, TREE_NAMES[k], ok, 14)
                        for k, ok in zip(TREE_AXIS, scored, strict=True)], fontsize=9)
    _mute_unscored(ax.get_xticklabels(), scored)
    ax.axvline(0.5, color="0.75", linestyle=":", linewidth=1)  # the protocol node: no level
    ax.set_ylabel("node score (0-10)")
    _bar_legend(fig, runs)
    return fig


def _overall_box(runs: Sequence[Run]) -> Figure:
    fig, ax = _new_figure("overall_box", "Overall score per sheet",
                          "box: interquartile range, line: median, diamond: mean, "
                          "whiskers: 5th-95th percentile, dots: beyond")
    ticks = []
    crowded = len(runs) > 4
    for i, run in enumerate(runs):
        stats = box_stats(item_overalls(run.report))
        if stats is None:
            ax.text(i, 5, "no scores", ha="center", va="center", color=MUTED, rotation=90)
            ticks.append(_box_tick(run.label, 0, crowded))
            continue
        _draw_box(ax, i, run, stats)
        ticks.append(_box_tick(run.label, stats.n, crowded))
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels(ticks, rotation=20 if crowded else 0, rotation_mode="anchor",
                       ha="right" if crowded else "center")
    # The run colour on the label too: a box with no spread has no visible face.
    for label, run in zip(ax.get_xticklabels(), runs, strict=True):
        label.set_color(run.colour)
    ax.set_xlim(-0.6, len(runs) - 0.4)
    ax.set_ylim(-0.3, 10.3)
    ax.set_ylabel("item Overall (0-10)")
    ax.grid(axis="y", color="0.9")
    ax.set_axisbelow(True)
    return fig


def _draw_box(ax: Axes, position: int, run: Run, stats: BoxStats) -> None:
    ax.bxp([stats.as_bxp(run.label)], positions=[position], widths=0.55, showmeans=True,
           patch_artist=True,
           boxprops={"facecolor": run.colour, "alpha": 0.75, "edgecolor": run.colour},
           whiskerprops={"color": run.colour, "linewidth": 1.5},
           capprops={"color": run.colour, "linewidth": 1.5},
           medianprops={"color": "black", "linewidth": 2},
           meanprops={"marker": "D", "markerfacecolor": "white", "markeredgecolor": "black",
                      "markersize": 7},
           flierprops={"marker": ".", "markerfacecolor": run.colour,
                       "markeredgecolor": run.colour, "markersize": 5})


def _box_tick(label: str, n: int, crowded: bool) -> str:
    return f"{label} (n={n})" if crowded else f"{label}\nn={n}"


def _domain_heatmap(runs: Sequence[Run]) -> Figure:
    import matplotlib

    fig, ax = _new_figure("domain_heatmap", "Overall by domain and model",
                          "mean item Overall; blank = no judged sheet of that domain")
    domains, rows = heatmap_data([r.report for r in runs])
    grid = np.ma.masked_invalid(np.array(
        [[math.nan if v is None else v for v in row] for row in rows], dtype=float
    ).reshape(len(domains), len(runs)))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="white")
    image = ax.imshow(grid, cmap=cmap, vmin=0, vmax=10, aspect="auto",
                      interpolation="nearest")
    _annotate_cells(ax, rows, cmap)
    ax.set_xticks(range(len(runs)), [r.label for r in runs],
                  rotation=25 if len(runs) > 3 else 0, ha="right" if len(runs) > 3 else "center")
    ax.set_yticks(range(len(domains)), domains)
    ax.set_xticks(np.arange(len(runs) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(domains) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="0.85", linewidth=1)
    ax.tick_params(which="minor", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    fig.colorbar(image, ax=ax, label="Overall (0-10)", shrink=0.8)
    return fig


def _annotate_cells(ax: Axes, rows: Sequence[Sequence[float | None]], cmap: Colormap) -> None:
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            if value is None:
                continue  # blank, like the cell
            red, green, blue, _ = cmap(value / 10)
            light = 0.299 * red + 0.587 * green + 0.114 * blue > 0.5
            ax.text(c, r, f"{value:.1f}", ha="center", va="center", fontsize=9,
                    color="black" if light else "white")


def _c_vs_d(runs: Sequence[Run]) -> Figure:
    fig, ax = _new_figure("c_vs_d", "C mean vs D mean per sheet",
                          "small markers: sheets (area grows with sheets at one point); "
                          "large: model mean")
    ax.plot([0, 10], [0, 10], color="0.8", linestyle="--", linewidth=1, zorder=0)
    for run in runs:
        counts = Counter(sheet_points(run.report))
        if counts:
            xs, ys = zip(*counts, strict=True)
            sizes = [28 * math.sqrt(n) for n in counts.values()]
            ax.scatter(xs, ys, s=sizes, color=run.colour, marker=run.marker, alpha=0.45,
                       linewidths=0)
        c_mean, d_mean = run.aggregate["c_mean"], run.aggregate["d_mean"]
        if c_mean is not None and d_mean is not None:
            ax.scatter([c_mean], [d_mean], s=260, color=run.colour, marker=run.marker,
                       edgecolors="black", linewidths=1.8, zorder=3)
    ax.set_xlim(-0.5, 10.5)
    ax.set_ylim(-0.5, 10.5)
    ax.set_aspect("equal")
    ax.set_xlabel("C mean (capability)")
    ax.set_ylabel("D mean (diagnostic)")
    ax.grid(color="0.93")
    ax.set_axisbelow(True)
    _legend(fig, runs)
    return fig


def _cost_vs_overall(runs: Sequence[Run], gpu_usd_per_hour: float | None = None) -> Figure:
    others = ("; runs whose backend reports none are left out" if gpu_usd_per_hour is None
              else f"\nruns marked (GPU): their drawing seconds at {gpu_usd_per_hour:g} USD "
                   f"per GPU hour")
    fig, ax = _new_figure("cost_vs_overall", "Generation cost vs Overall per model",
                          f"reported generation cost of the run's sheets{others}")
    points = [(run, generation_cost(run.report, gpu_usd_per_hour), run.aggregate["overall"])
              for run in runs]
    marked = {id(run) for run in runs if priced_by_gpu_time(run.report, gpu_usd_per_hour)}
    return _cost_scatter(fig, ax, runs, points, "generation cost of the sheets (USD)",
                         lambda run: f"{run.label} (GPU)" if id(run) in marked else run.label)


def _judge_cost_vs_overall(runs: Sequence[Run]) -> Figure:
    fig, ax = _new_figure("judge_cost_vs_overall", "Judge cost vs Overall per model",
                          "judge cost of the run divided by its judged sheets")
    points = [(run, cost_per_sheet(run.report), run.aggregate["overall"]) for run in runs]
    return _cost_scatter(fig, ax, runs, points, "judge cost per judged sheet (USD)")


def _cost_scatter(fig: Figure, ax: Axes, runs: Sequence[Run],
                  points: Sequence[tuple[Run, float | None, float | None]],
                  xlabel: str, label: Callable[[Run], str] = lambda run: run.label) -> Figure:
    from matplotlib.ticker import StrMethodFormatter

    shown = [(run, x, y) for run, x, y in points if x is not None and y is not None]
    right = max((x for _, x, _ in shown), default=0.0) * 1.15 or 1.0
    for run, x, y in shown:
        ax.scatter([x], [y], s=140, color=run.colour, marker=run.marker, edgecolors="black",
                   linewidths=0.8, zorder=3, clip_on=False)
        # Labels of points in the right half go to their left, inside the axes.
        left_side = x > right / 2
        # Near the top a label goes under its point, clear of the subtitle.
        ax.annotate(label(run), (x, y), xytext=(-9 if left_side else 9, -14 if y > 9 else 6),
                    textcoords="offset points", fontsize=9,
                    ha="right" if left_side else "left")
    ax.set_xlim(-0.03 * right, right)
    ax.set_ylim(0, 10)
    ax.xaxis.set_major_formatter(StrMethodFormatter("${x:.4g}"))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Overall (0-10)")
    ax.grid(color="0.93")
    ax.set_axisbelow(True)
    _legend(fig, runs)
    return fig


FIGURES: dict[str, Callable[[Sequence[Run]], Figure]] = {
    "c_radar": _c_radar,
    "d_bars": _d_bars,
    "tree_levels": _tree_levels,
    "overall_box": _overall_box,
    "domain_heatmap": _domain_heatmap,
    "c_vs_d": _c_vs_d,
    "cost_vs_overall": _cost_vs_overall,
    "judge_cost_vs_overall": _judge_cost_vs_overall,
}
# Figures drawn only when some run has what they plot.
_NEEDS: dict[str, Callable[[Sequence[Mapping[str, Any]]], bool]] = {
    "cost_vs_overall": lambda reports: has_generation_cost(reports),
    "judge_cost_vs_overall": lambda reports: has_judge_cost(reports),
}


def build_figures(reports: Sequence[Mapping[str, Any]],
                  gpu_usd_per_hour: float | None = None) -> dict[str, Figure]:
    """The figures by name, in ``FIGURES`` order; ``cost_vs_overall`` only when a run has a
    generation cost (reported, or its GPU seconds at ``gpu_usd_per_hour``),
    ``judge_cost_vs_overall`` only when one has a judge cost. Raises ImportError (naming the
    install command) without matplotlib."""
    _require_matplotlib()
    if not reports:
        raise ValueError("no reports to draw")
    runs = make_runs(reports)
    def cost_figure(runs: Sequence[Run]) -> Figure:
        return _cost_vs_overall(runs, gpu_usd_per_hour)

    def has_cost(reports: Sequence[Mapping[str, Any]]) -> bool:
        return has_generation_cost(reports, gpu_usd_per_hour)

    drawers = {**FIGURES, "cost_vs_overall": cost_figure}
    needs = {**_NEEDS, "cost_vs_overall": has_cost}
    with _style():
        return {name: draw(runs) for name, draw in drawers.items()
                if name not in needs or needs[name](reports)}


def write_figures(reports: Sequence[Mapping[str, Any]], out: Path,
                  gpu_usd_per_hour: float | None = None) -> list[Path]:
    """Write every figure as ``<name>.png`` and ``<name>.svg`` under ``out``.

    Returns the files written, PNG before SVG, in ``FIGURES`` order. The cost figures are
    left out, and absent from the list, when no run has what they plot: a reported
    generation cost (``has_generation_cost``; local backends report none) or a judge cost
    (``has_judge_cost``; offline judges, replayed judgments).
    """
    figures = build_figures(reports, gpu_usd_per_hour)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with _style():
        for name, fig in figures.items():
            png, svg = out / f"{name}.png", out / f"{name}.svg"
            _save(fig, png, format="png", dpi=DPI)
            _save(fig, svg, format="svg", metadata={"Date": None})
            written += [png, svg]
    return written


def _save(fig: Figure, path: Path, **options: Any) -> None:
    """Write the figure unless the file already holds these bytes: a rebuild of the same
    reports leaves the files as they were."""
    buffer = io.BytesIO()
    fig.savefig(buffer, **options)
    data = buffer.getvalue()
    if not (path.is_file() and path.read_bytes() == data):
        path.write_bytes(data)
