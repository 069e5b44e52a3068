"""The HTML report: a folder that opens from disk, a leaderboard and one page per run.

Layout of the folder::

    index.html                      leaderboard over the runs, models side by side
    run-<model>--<judge>.html       one card per case, with filters and sorting
    media/<model>/<case>.png        the full sheet (a hard link where the file system allows)
    media/<model>/<case>.thumb.jpg  thumbnail; <case>.t1.jpg ... <case>.t4.jpg panel crops

Every text that comes from a case, a model or a judge goes through ``html.escape``. Images
are files beside the pages, never data URLs, so a page of 750 cases stays small.
"""

from __future__ import annotations

import contextlib
import html
import math
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from PIL import Image

from ..cases.loading import builtin_cases_dir, load_case_file
from ..cases.model import Case, CaseFileError
from ..rubric.facts import (
    ALL_DIMS,
    C_DIMS,
    D_DIMS,
    LAYOUT_GATE_LABEL,
    LEVEL_KEYS,
    LEVEL_NAMES,
    PROTOCOL_NODE_LABEL,
)
from ..sheet.geometry import STAGE_ORDER, split
from ..store.atomic import read_json
from ..store.paths import dir_slug
from .coverage import coverage_note, coverage_text, is_complete

INDEX = "index.html"
MEDIA = "media"
FIGURES_DIR = "figures"
THUMB_PX = 480  # twice the displayed width: sharp on high-density screens
PANEL_PX = 240
JPEG_QUALITY = 82
OUTCOMES = ("passed", "failed", "error")
DIFFICULTIES = ("easy", "medium", "hard")
DIM_NAMES: dict[str, str] = {**C_DIMS, **D_DIMS}

CSS = """
:root { --ok: #1a7f37; --bad: #cf222e; --err: #9a6700; --line: #d0d7de; --muted: #59636e; }
body { font: 14px/1.45 system-ui, sans-serif; color: #1f2328; margin: 0 auto;
       max-width: 1400px; padding: 0 1rem 2rem; }
h1 { font-size: 1.4rem; margin: 1rem 0 .25rem; }
h2 { font-size: 1.05rem; margin: 0; }
h3 { font-size: .9rem; margin: .6rem 0 .2rem; }
a { color: #0969da; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; margin: .5rem 0 1rem; }
figure.chart { margin: 0; flex: 1 1 560px; max-width: 720px; }
figure.chart img { width: 100%; height: auto; border: 1px solid var(--line); }
figure.chart figcaption { color: var(--muted); font-size: .85rem; }
.muted { color: var(--muted); }
.partial { color: var(--err); font-weight: 600; }
tr.partial-run td { background: #fff8c5; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: .5rem 0 1.5rem; }
th, td { padding: .25rem .45rem; border-bottom: 1px solid var(--line); text-align: right;
         white-space: nowrap; }
th { background: #f6f8fa; }
th.text, td.text { text-align: left; }
.filters { position: sticky; top: 0; z-index: 1; background: #fff; display: flex;
           flex-wrap: wrap; gap: .4rem 1rem; align-items: center; padding: .6rem 0;
           border-bottom: 1px solid var(--line); }
[hidden] { display: none !important; }
.card { display: grid; grid-template-columns: 220px 1fr; gap: .5rem 1rem; margin: .8rem 0;
        padding: .8rem; border: 1px solid var(--line); border-radius: 6px; }
.card:target { outline: 3px solid #0969da; }
.card img { display: block; width: 100%; aspect-ratio: 1; object-fit: contain;
            background: #f6f8fa; }
.panels { display: grid; grid-template-columns: repeat(4, 1fr); gap: 6px; max-width: 680px; }
.panels figure { margin: 0; font-size: .75rem; text-align: center; color: var(--muted); }
.outcome { font-weight: 600; text-transform: uppercase; font-size: .8rem; margin-left: .5rem; }
.passed, .good { color: var(--ok); }
.failed, .bad { color: var(--bad); }
.error { color: var(--err); }
.reason { white-space: pre-wrap; border-left: 3px solid var(--err); padding-left: .5rem; }
.headline b { font-size: 1.2rem; margin-right: 1rem; }
.dims { display: flex; flex-wrap: wrap; gap: .25rem; padding: 0; margin: .3rem 0; }
.dims li { list-style: none; border: 1px solid var(--line); border-radius: 4px;
           padding: 0 .35rem; font-variant-numeric: tabular-nums; }
.label { display: inline-block; background: #fff1e5; border-radius: 4px; padding: 0 .35rem;
         margin: 0 .25rem .25rem 0; }
ul.plain { margin: .2rem 0; padding-left: 1.1rem; }
.verdicts td { text-align: left; vertical-align: top; white-space: normal; }
.verdicts { margin: .2rem 0; }
""".strip()

# Filters and sorting work on data attributes only: no text is ever parsed as HTML.
SCRIPT = """
(function () {
  const box = document.getElementById("cards");
  const cards = Array.from(box.querySelectorAll(".card"));
  const selects = Array.from(document.querySelectorAll("select[data-filter]"));
  const sorter = document.getElementById("sort");
  const shown = document.getElementById("shown");
  const overall = (c) => c.dataset.overall === "" ? NaN : Number(c.dataset.overall);
  const text = (x, y) => (x < y ? -1 : x > y ? 1 : 0);  // code points, as Python sorts
  const byCase = (a, b) => text(a.dataset.case, b.dataset.case);
  const last = (x, y) => isNaN(x) - isNaN(y);
  const orders = {
    "overall-asc": (a, b) => last(overall(a), overall(b)) || overall(a) - overall(b)
      || byCase(a, b),
    "overall-desc": (a, b) => last(overall(a), overall(b)) || overall(b) - overall(a)
      || byCase(a, b),
    "case": byCase,
    "domain": (a, b) => text(a.dataset.domain, b.dataset.domain) || byCase(a, b),
  };
  function keep(card) {
    return selects.every((s) => {
      const value = card.dataset[s.dataset.filter];
      if (s.value === "") return true;
      return "list" in s.dataset ? value.split(" ").includes(s.value) : value === s.value;
    });
  }
  function update() {
    let n = 0;
    for (const card of cards) { card.hidden = !keep(card); n += card.hidden ? 0 : 1; }
    shown.textContent = n + " of " + cards.length + " cases shown";
  }
  function order() {
    for (const card of cards.slice().sort(orders[sorter.value])) box.appendChild(card);
  }
  selects.forEach((s) => s.addEventListener("change", update));
  sorter.addEventListener("change", order);
  update();
})();
""".strip()


# ---------------------------------------------------------------- small helpers


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def url(path: str) -> str:
    """A relative URL for a path inside the folder, escaped for an attribute."""
    return esc(quote(path))


def num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def anchor_id(case_id: str) -> str:
    return f"case-{case_id}"


def case_url(run_page: str, case_id: str) -> str:
    """The link to one case's card, e.g. for a JUnit failure: ``run-x--pixel.html#case-id``."""
    return f"{run_page}#{quote(anchor_id(case_id), safe='')}"


def _unique(names: Iterable[str]) -> list[str]:
    """The names, with -2, -3 ... added where one repeats (runs of different output folders)."""
    seen: Counter[str] = Counter()
    out = []
    for name in names:
        seen[name] += 1
        out.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return out


def run_pages(run_dirs: Sequence[Path]) -> list[str]:
    """The page name of each run, in order, as ``write_html`` names them for these runs."""
    return [f"run-{s}.html" for s in _unique(
        dir_slug(f"{d.parent.name}--{d.name}") for d in run_dirs)]


# ---------------------------------------------------------------- loading


@dataclass(frozen=True)
class Run:
    """One run directory with its report, page name and media folder inside the report."""

    run_dir: Path
    report: Mapping[str, Any]
    page: str
    media: str

    @property
    def name(self) -> str:
        manifest = self.report["manifest"]
        setting = manifest["setting"]
        return str(manifest["model"]["spec"]) + (
            "" if setting == "prompt-only" else f"@{setting}")

    @property
    def judge(self) -> str:
        return str(self.report["manifest"]["judge"]["name"])

    @property
    def judge_model(self) -> str:
        return str(self.report["manifest"]["judge"]["config"].get("judge_model", "?"))

    @property
    def items(self) -> list[Mapping[str, Any]]:
        return list(self.report["items"])

    @property
    def images_dir(self) -> Path:
        return self.run_dir.parent / "images"


def load_runs(run_dirs: Sequence[Path]) -> list[Run]:
    runs = []
    # Judges of one model share its images, so they share one media folder too.
    model_dirs = list(dict.fromkeys(d.resolve().parent for d in run_dirs))
    media = dict(zip(model_dirs, _unique(dir_slug(p.name) for p in model_dirs), strict=True))
    for run_dir, page in zip(run_dirs, run_pages(run_dirs), strict=True):
        report = read_json(run_dir / "report.json")
        if not isinstance(report, dict) or "items" not in report:
            raise FileNotFoundError(f"{run_dir}: no readable report.json (is it a run "
                                    f"directory, reports/<model>/<judge>?)")
        runs.append(Run(run_dir.resolve(), report, page, media[run_dir.resolve().parent]))
    return runs


def find_cases(runs: Sequence[Run], case_paths: Sequence[Path] = ()) -> dict[tuple[str, str],
                                                                            Case]:
    """Cases by (id, spec hash), for predicate texts and prompts the report does not hold.

    Looked for in ``case_paths``, beside each run's output folder (where pytest usually ran)
    and among the packaged cases; the hash makes sure a copy that changed is never shown.
    """
    names = {str(i["case_file"]) for run in runs for i in run.items}
    places = [p for p in case_paths if p.is_dir()] + [r.run_dir.parent.parent.parent
                                                       for r in runs]
    with contextlib.suppress(FileNotFoundError):  # an install without packaged cases
        places.append(builtin_cases_dir())
    files = [p for p in case_paths if p.is_file()]
    files += [place / name for place in dict.fromkeys(places) for name in sorted(names)]
    found: dict[tuple[str, str], Case] = {}
    for path in dict.fromkeys(files):
        if not path.is_file():
            continue
        try:
            cases = load_case_file(path)
        except (CaseFileError, OSError, ValueError):
            continue
        for case in cases:
            found.setdefault((case.id, case.spec_hash), case)
    return found


# ---------------------------------------------------------------- media


@dataclass(frozen=True)
class Media:
    """Paths inside the report folder; None where the sheet is missing or unreadable."""

    full: str | None = None
    thumb: str | None = None
    panels: tuple[str, ...] = ()


def _fresh(dest: Path, source: Path) -> bool:
    return dest.exists() and dest.stat().st_mtime_ns >= source.stat().st_mtime_ns


def _place_full(source: Path, dest: Path) -> bool:
    """Hard link the sheet where possible (no copy of a large file), else copy it.

    Returns whether ``dest`` changed: the thumbnails of a replaced sheet are made again.
    """
    if dest.exists():
        s, d = source.stat(), dest.stat()
        if os.path.samefile(source, dest) or (s.st_size, s.st_mtime_ns) == (d.st_size,
                                                                            d.st_mtime_ns):
            return False
        dest.unlink()
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)
    return True


def _save_small(image: Image.Image, size: int, dest: Path) -> None:
    small = image.convert("RGB")
    small.thumbnail((size, size), Image.Resampling.LANCZOS)
    small.save(dest, format="JPEG", quality=JPEG_QUALITY, optimize=True)


def make_media(source: Path | None, folder: Path, rel: str, case_id: str) -> Media:
    """The sheet, its thumbnail and its four panel crops in ``folder`` (``rel`` inside)."""
    if source is None or not source.is_file():
        return Media()
    folder.mkdir(parents=True, exist_ok=True)
    full = folder / f"{case_id}{source.suffix.lower()}"
    thumb = folder / f"{case_id}.thumb.jpg"
    panels = [folder / f"{case_id}.{stage}.jpg" for stage in STAGE_ORDER]
    try:
        replaced = _place_full(source, full)
        if replaced or not all(_fresh(p, source) for p in (thumb, *panels)):
            with Image.open(source) as image:
                image.load()
                _save_small(image, THUMB_PX, thumb)
                for crop, dest in zip(split(image), panels, strict=True):
                    _save_small(crop, PANEL_PX, dest)
    except (OSError, ValueError):
        return Media(full=f"{rel}/{full.name}" if full.exists() else None)
    return Media(f"{rel}/{full.name}", f"{rel}/{thumb.name}",
                 tuple(f"{rel}/{p.name}" for p in panels))


def sheet_path(run: Run, item: Mapping[str, Any]) -> Path | None:
    """The sheet beside the run (the folder may have moved since), else the recorded path."""
    for candidate in (run.images_dir / f"{item['case_id']}.png", item.get("image")):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def build_media(runs: Sequence[Run], out: Path,
                progress: Callable[[int, int], None] | None = None
                ) -> dict[tuple[str, str], Media]:
    """Media for every (media folder, case id), made in parallel: decoding dominates.
    ``progress(done, total)`` is called as sheets are done."""
    jobs: dict[tuple[str, str], Path | None] = {}
    for run in runs:
        for item in run.items:
            jobs.setdefault((run.media, str(item["case_id"])), sheet_path(run, item))

    def one(key: tuple[str, str]) -> Media:
        rel = f"{MEDIA}/{key[0]}"
        return make_media(jobs[key], out / rel, rel, key[1])

    made: list[Media] = []
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        for media in pool.map(one, jobs):
            made.append(media)
            if progress is not None:
                progress(len(made), len(jobs))
    return dict(zip(jobs, made, strict=True))


# ---------------------------------------------------------------- pages


def page(title: str, body: str, script: str = "") -> str:
    tail = f"<script>\n{script}\n</script>\n" if script else ""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>\n"
            f"{body}\n{tail}</body>\n</html>\n")


def _cost(run: Run) -> str:
    cost = run.report["aggregate"]["cost_usd"]
    config = run.report["manifest"]["judge"]["config"]
    # Reports from before unknown costs were null carry 0 with a judge model of no price.
    if cost is None or ("price_usd_per_mtok" in config and config["price_usd_per_mtok"] is None):
        return "unknown"
    return f"${cost:.4f}"


def _gate(rate: float | None) -> str:
    return "–" if rate is None else f"{100 * rate:.1f}%"


def _leader_row(rank: str, run: Run) -> str:
    agg = run.report["aggregate"]
    cells = [rank, f'<a href="{url(run.page)}">{esc(run.name)}</a>', esc(run.judge)]
    note = coverage_note(run.name, run.report)
    covered = esc(coverage_text(run.report))
    if note is not None:
        covered = f'<span class="partial" title="{esc(note)}">{covered}</span>'
    numbers = [str(agg["n"]), covered, str(agg["passed"]), str(agg["failed"]),
               str(agg["errors"]),
               num(agg["c_mean"]), num(agg["d_mean"]), f"<b>{num(agg['overall'])}</b>",
               _gate(agg["gate_pass_rate"]), num(agg["tree"]["gate"]),
               *(num(agg["tree"][k]) for k in LEVEL_KEYS)]
    tail = [esc(run.judge_model), esc(_cost(run))]
    left = "".join(f'<td class="text">{c}</td>' for c in cells[1:])
    marked = "" if note is None else ' class="partial-run"'
    return (f"<tr{marked}><td>{cells[0]}</td>{left}" + "".join(f"<td>{c}</td>" for c in numbers)
            + "".join(f'<td class="text">{c}</td>' for c in tail) + "</tr>")


def _ranked(runs: Sequence[Run]) -> list[tuple[str, Run]]:
    """Ranks for the complete runs of one suite (the one most complete runs ran); the others,
    partial runs and runs of other suites, follow without a rank."""
    def key(run: Run) -> float:
        overall = run.report["aggregate"]["overall"]
        return math.inf if overall is None else -float(overall)

    def suite(run: Run) -> str:
        return str(run.report["coverage"]["suite"]["sha256"])

    complete = [r for r in runs if is_complete(r.report)]
    suites = Counter(suite(r) for r in complete)
    main = suites.most_common(1)[0][0] if suites else None
    ranked = sorted((r for r in complete if suite(r) == main), key=key)
    others = sorted((r for r in runs if r not in ranked), key=key)
    return [(str(i), r) for i, r in enumerate(ranked, 1)] + [("–", r) for r in others]


def leaderboard(runs: Sequence[Run]) -> str:
    levels = "".join(f'<th title="{esc(LEVEL_NAMES[k])}">{k}</th>' for k in LEVEL_KEYS)
    head = ('<tr><th>#</th><th class="text">model</th><th class="text">judge</th><th>N</th>'
            '<th title="cases covered / cases of the suite">cases</th>'
            "<th>pass</th><th>fail</th><th>errors</th><th>C mean</th><th>D mean</th>"
            f'<th>Overall</th><th title="{esc(LAYOUT_GATE_LABEL)}: share of sheets">'
            f'layout gate passed</th><th title="{esc(PROTOCOL_NODE_LABEL)}">protocol node</th>'
            f'{levels}<th class="text">judge model</th>'
            '<th class="text">cost</th></tr>')
    ranked = _ranked(runs)
    rows = "\n".join(_leader_row(rank, run) for rank, run in ranked)
    table = f'<div class="scroll"><table id="leaderboard">\n{head}\n{rows}\n</table></div>'
    if all(rank != "–" for rank, _ in ranked):
        return table
    return (table + '\n<p class="muted" id="unranked">Rows without a rank cover only part of '
            "their suite (a -k or -m subset, a shard, a partial merge) or another suite than "
            "the ranked rows: their scores are not comparable with the ranked rows "
            "(docs/shards.md).</p>")


Cell = Callable[[Run, str], str]


def side_by_side(runs: Sequence[Run], rows: Sequence[tuple[str, str]], cell: Cell,
                 table_id: str) -> str:
    """A table with one row per (key, text shown) and one column per run."""
    head = '<tr><th class="text"></th>' + "".join(
        f'<th><a href="{url(r.page)}">{esc(r.name)}</a><br><span class="muted">'
        f"{esc(r.judge)}</span></th>" for r in runs) + "</tr>"
    body = "".join(
        f'<tr><td class="text">{esc(text)}</td>'
        + "".join(f"<td>{cell(run, key)}</td>" for run in runs) + "</tr>"
        for key, text in rows)
    return f'<div class="scroll"><table id="{table_id}">\n{head}\n{body}\n</table></div>'


def _domain_cell(run: Run, domain: str) -> str:
    found = run.report["aggregate"]["by_domain"].get(domain)
    if found is None:
        return ""
    return f'{num(found["overall"])} <span class="muted">({found["n"]})</span>'


def _dim_cell(run: Run, dim: str) -> str:
    return num(run.report["aggregate"]["dims"][dim]["mean"])


def _scored_dims(runs: Sequence[Run]) -> list[tuple[str, str]]:
    """Dimensions some run scored, labelled with their names (a pixel judge scores six)."""
    return [(d, f"{d} {DIM_NAMES[d]}") for d in ALL_DIMS
            if any(r.report["aggregate"]["dims"][d]["mean"] is not None for r in runs)]


# The figures' captions on the index page, in the order they are shown.
FIGURE_CAPTIONS: dict[str, str] = {
    "c_radar": "Capability scores C0 and C2-C9 per model",
    "d_bars": "Diagnostic scores D0-D14 per model",
    "tree_levels": "Capability tree: protocol node and L0-L6",
    "overall_box": "Distribution of per-case Overall",
    "domain_heatmap": "Overall by domain and model",
    "c_vs_d": "Per-sheet C mean against D mean",
    "cost_vs_overall": "Generation cost against Overall",
    "judge_cost_vs_overall": "Judge cost against Overall",
}


def draw_figures(runs: Sequence[Run], out: Path, gpu_usd_per_hour: float | None = None
                 ) -> tuple[list[Path], str | None]:
    """The figures of these runs under ``out``/figures, and why there are none, if none."""
    from .figures import write_figures

    try:
        written = write_figures([run.report for run in runs], out / FIGURES_DIR,
                                gpu_usd_per_hour)
    except ImportError as exc:
        return [], str(exc)
    for stale in (out / FIGURES_DIR).glob("*.*"):  # a figure these runs no longer have
        if stale not in written and stale.stem in FIGURE_CAPTIONS:
            stale.unlink()
    return written, None


def figures_section(files: Sequence[Path], note: str | None) -> str:
    """The figures as images on the page, each linking to its PNG."""
    if not files:
        return f'<h2 id="figures">Figures</h2>\n<p class="muted">No figures: {esc(note or "")}</p>'
    shown = [p for p in files if p.suffix == ".svg"]
    order = {name: i for i, name in enumerate(FIGURE_CAPTIONS)}
    shown.sort(key=lambda p: order.get(p.stem, len(order)))
    figures = "\n".join(
        f'<figure class="chart"><a href="{url(f"{FIGURES_DIR}/{p.stem}.png")}">'
        f'<img src="{url(f"{FIGURES_DIR}/{p.name}")}" alt="{caption}" loading="lazy"></a>'
        f"<figcaption>{caption}</figcaption></figure>"
        for p in shown for caption in [esc(FIGURE_CAPTIONS.get(p.stem, p.stem))])
    return f'<h2 id="figures">Figures</h2>\n<div class="charts">\n{figures}\n</div>'


def render_index(runs: Sequence[Run], figures: str = "") -> str:
    domains = sorted({d for r in runs for d in r.report["aggregate"]["by_domain"]})
    body = (
        "<h1>ImageTime leaderboard</h1>\n"
        '<p class="muted">Post-cap scores, 0-10; ranked by Overall. Errors are counted apart '
        "and never scored. Open a model for its cases.</p>\n"
        f"{leaderboard(runs)}\n<h2>Overall by domain (N)</h2>\n"
        f"{side_by_side(runs, [(d, d) for d in domains], _domain_cell, 'domains')}\n"
        "<h2>Mean by dimension (those some run scored)</h2>\n"
        f"{side_by_side(runs, _scored_dims(runs), _dim_cell, 'dims')}\n{figures}")
    return page("ImageTime leaderboard", body)


# ---------------------------------------------------------------- one case card


def _thumb(media: Media, case_id: str) -> str:
    if media.thumb is None:
        note = "sheet unreadable" if media.full else "no sheet"
        link = f' (<a href="{url(media.full)}">file</a>)' if media.full else ""
        return f'<div class="muted">{note}{link}</div>'
    return (f'<a href="{url(media.full or media.thumb)}"><img src="{url(media.thumb)}" '
            f'alt="sheet of {esc(case_id)}" loading="lazy"></a>')


def _strip(media: Media, case_id: str) -> str:
    """The four panels in reading order, as a strip: the sheet read as a timeline."""
    if not media.panels:
        return ""
    panels = "".join(
        f'<figure><img src="{url(p)}" alt="{esc(case_id)} {s}" loading="lazy">'
        f"<figcaption>{s}</figcaption></figure>"
        for s, p in zip(STAGE_ORDER, media.panels, strict=True))
    return f'<div class="panels">{panels}</div>'


def _scores(item: Mapping[str, Any]) -> str:
    gate = item.get("gate_pass")
    gate_text = "–" if gate is None else (
        '<span class="good">passes</span>' if gate else '<span class="bad">fails</span>')
    dims = "".join(
        f'<li title="{esc(DIM_NAMES[d])}">{d} <b>{v}</b></li>'
        for d in ALL_DIMS if (v := item["scores"].get(d)) is not None)
    return (f'<p class="headline">Overall <b>{num(item["overall"])}</b> C mean '
            f"<b>{num(item['c_mean'])}</b> D mean <b>{num(item['d_mean'])}</b> "
            f"layout gate {gate_text} protocol node <b>{num(item['tree'].get('gate'))}</b></p>"
            + (f'<ul class="dims">{dims}</ul>' if dims else ""))


_WORDS = {"predicates": {True: "holds", False: "does not hold", None: "unclear"},
          "forbidden": {True: "observed", False: "absent", None: "unclear"}}
_GOOD = {"predicates": True, "forbidden": False}


def _verdicts(kind: str, verdicts: Sequence[Mapping[str, Any]], texts: Mapping[str, str]) -> str:
    rows = []
    for v in verdicts:
        value = v.get("value")
        cls = "good" if value is _GOOD[kind] else "bad"
        text = texts.get(str(v.get("id")), "")
        rows.append(f'<tr><td>{esc(v.get("id", "?"))}</td><td>{esc(text)}</td>'
                    f'<td class="{cls}">{_WORDS[kind].get(value, "unclear")}</td>'
                    f'<td>{esc(v.get("evidence", ""))}</td></tr>')
    title = "Predicates" if kind == "predicates" else "Forbidden states"
    return f'<h3>{title}</h3><table class="verdicts">{"".join(rows)}</table>' if rows else ""


def _checks(judgment: Mapping[str, Any] | None, case: Case | None) -> str:
    if judgment is None:
        return ""
    if not judgment.get("evaluates_predicates"):
        return ('<p class="muted">Predicates and forbidden states: not checked by this '
                "judge.</p>")
    predicates = ({p.id: p.text + "".join(f" [{tag}]" for tag in p.tags)
                   for p in case.predicates} if case else {})
    forbidden = {f.id: f.text for f in case.forbidden} if case else {}
    return (_verdicts("predicates", judgment.get("predicates", []), predicates)
            + _verdicts("forbidden", judgment.get("forbidden", []), forbidden))


def _list(title: str, entries: Sequence[str]) -> str:
    if not entries:
        return ""
    return f'<h3>{title}</h3><ul class="plain">' + "".join(
        f"<li>{esc(e)}</li>" for e in entries) + "</ul>"


def _labels(labels: Sequence[str]) -> str:
    if not labels:
        return ""
    return "<h3>Failure labels</h3><p>" + "".join(
        f'<span class="label">{esc(label)}</span>' for label in labels) + "</p>"


def _shape(item: Mapping[str, Any]) -> str:
    """A badge on an item whose sheet is not square (the protocol's sheet is)."""
    if item.get("square") is not False:
        return ""
    return (' <span class="label not-square" title="The protocol\'s sheet is square; this '
            'backend drew another shape">not square</span>')


@dataclass(frozen=True)
class CardInput:
    item: Mapping[str, Any]
    media: Media
    judgment: Mapping[str, Any] | None  # the "judgment" object of the stored record
    case: Case | None
    sheet_changed: bool = False


def render_card(card: CardInput) -> str:
    item, case_id = card.item, str(card.item["case_id"])
    outcome = str(item["status"])
    overall = "" if item["overall"] is None else f"{item['overall']:.4f}"
    attrs = {"domain": item["domain"], "levels": " ".join(item["probed_levels"]),
             "difficulty": item["difficulty"], "outcome": outcome, "overall": overall,
             "case": case_id}
    data = " ".join(f'data-{k}="{esc(v)}"' for k, v in attrs.items())
    meta = " · ".join(esc(x) for x in (item["domain"], item["subcategory"], item["difficulty"],
                                        f"variant {item['variant']}",
                                        " ".join(item["probed_levels"])))
    error = (f'<p class="reason">{esc(item["error"])}</p>' if outcome == "error"
             and item.get("error") else "")
    if card.sheet_changed:
        error += ('<p class="reason">A later run regenerated this sheet: the image shown is '
                  "not the one these scores judged.</p>")
    rationale = card.judgment.get("rationale") if card.judgment else None
    prompt = (f"<details><summary>Prompt</summary><p>{esc(card.case.prompt)}</p></details>"
              if card.case else "")
    body = (error + (_scores(item) if outcome != "error" else "")
            + _list("Caps applied", item["caps"]) + _labels(item["labels"])
            + _checks(card.judgment, card.case)
            + (f"<h3>Judge's rationale</h3><p>{esc(rationale)}</p>" if rationale else "")
            + prompt)
    return (f'<article class="card" id="{esc(anchor_id(case_id))}" {data}>\n'
            f"{_thumb(card.media, case_id)}\n<div>"
            f'<h2><a href="#{esc(quote(anchor_id(case_id)))}">{esc(case_id)}</a>'
            f'<span class="outcome {esc(outcome)}">{esc(outcome)}</span>{_shape(item)}</h2>'
            f'<div class="muted">{meta}</div><p>{esc(item["concept"])}</p>'
            f"{_strip(card.media, case_id)}{body}</div>\n</article>")


# ---------------------------------------------------------------- one run page


def _select(label: str, key: str, values: Sequence[tuple[str, str]], is_list: bool = False) -> str:
    options = "".join(f'<option value="{esc(v)}">{esc(text)}</option>' for v, text in values)
    flag = " data-list" if is_list else ""
    return (f'<label>{label} <select data-filter="{key}"{flag}><option value="">all</option>'
            f"{options}</select></label>")


def filters(items: Sequence[Mapping[str, Any]]) -> str:
    def counted(key: str, order: Sequence[str] = ()) -> list[tuple[str, str]]:
        counts = Counter(str(i[key]) for i in items)
        known = [v for v in order if v in counts] + sorted(set(counts) - set(order))
        return [(v, f"{v} ({counts[v]})") for v in known]

    levels = Counter(level for i in items for level in i["probed_levels"])
    sort = "".join(f'<option value="{v}">{t}</option>' for v, t in (
        ("case", "case id"), ("overall-asc", "Overall, lowest first"),
        ("overall-desc", "Overall, highest first"), ("domain", "domain")))
    return ('<form class="filters" id="filters" onsubmit="return false">'
            + _select("Domain", "domain", counted("domain"))
            + _select("Level", "levels", [(k, f"{k} ({levels[k]})") for k in LEVEL_KEYS
                                          if levels[k]], is_list=True)
            + _select("Difficulty", "difficulty", counted("difficulty", DIFFICULTIES))
            + _select("Outcome", "outcome", counted("status", OUTCOMES))
            + f'<label>Sort <select id="sort">{sort}</select></label>'
            + '<output id="shown"></output></form>')


def _run_header(run: Run) -> str:
    m, agg = run.report["manifest"], run.report["aggregate"]
    facts = (f"judge {esc(run.judge)} ({esc(run.judge_model)}) · {esc(m['setting'])} · "
             f"{m['size']} px · seed {m['seed']} · pass threshold {m['pass_threshold']} · "
             f"{esc(run.report['rubric_version'])} · {esc(run.report['created'])}")
    summary = (f"{agg['n']} cases: {agg['passed']} passed, {agg['failed']} failed, "
               f"{agg['errors']} errors · C mean {num(agg['c_mean'])} · D mean "
               f"{num(agg['d_mean'])} · Overall {num(agg['overall'])} · layout gate passed "
               f"{_gate(agg['gate_pass_rate'])} · judge cost {esc(_cost(run))}")
    note = coverage_note(run.name, run.report)
    covered = "" if note is None else f'<p class="partial" id="coverage">{esc(note)}</p>'
    return (f'<p><a href="{INDEX}">← leaderboard</a></p><h1>{esc(run.name)}</h1>'
            f'<p class="muted">{facts}</p>{covered}<p>{summary}</p>')


def _judgment_record(run: Run, item: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The stored judgment this run scored; None for an error (a file there is older)."""
    if item["status"] == "error":
        return None
    for path in (run.run_dir / "judgments" / f"{item['case_id']}.json", item.get("judgment")):
        record = read_json(Path(path)) if path else None
        if (isinstance(record, dict) and isinstance(record.get("judgment"), dict)
                and record.get("case_spec_sha256") in (None, item.get("case_sha256"))):
            return record
    return None


def _sheet_changed(run: Run, item: Mapping[str, Any], record: Mapping[str, Any] | None) -> bool:
    """True when a later run regenerated the sheet that this run judged (images are shared)."""
    image = read_json(run.images_dir / f"{item['case_id']}.json")
    if record is None or not isinstance(image, dict):
        return False
    return bool(record.get("image_sha256")) and record.get("image_sha256") != image.get(
        "image_sha256")


def _card_input(run: Run, item: Mapping[str, Any], media: Mapping[tuple[str, str], Media],
                cases: Mapping[tuple[str, str], Case]) -> CardInput:
    record = _judgment_record(run, item)
    case_id = str(item["case_id"])
    return CardInput(item, media[(run.media, case_id)],
                     record["judgment"] if record else None,
                     cases.get((case_id, str(item.get("case_sha256", "")))),
                     _sheet_changed(run, item, record))


def render_run(run: Run, media: Mapping[tuple[str, str], Media],
               cases: Mapping[tuple[str, str], Case]) -> str:
    cards = "\n".join(render_card(_card_input(run, item, media, cases)) for item in run.items)
    body = (f'{_run_header(run)}\n<p><a href="{url(INDEX)}#figures">Figures of all runs</a>'
            f'</p>\n{filters(run.items)}\n<main id="cards">\n{cards}\n</main>')
    return page(f"ImageTime: {run.name} ({run.judge})", body, SCRIPT)


def write_html(run_dirs: Sequence[Path], out: Path, *,
               case_paths: Sequence[Path] = (),
               progress: Callable[[int, int], None] | None = None,
               gpu_usd_per_hour: float | None = None) -> Path:
    """Write the report folder for these run directories, figures included (shown on the
    index page, linked from every run page); returns the path of index.html.

    ``case_paths`` (files or folders) are searched for the cases' predicate texts and prompts
    besides the usual places; without them a card shows the predicates by id.
    ``progress(done, total)`` hears of the sheets as their thumbnails are made.
    """
    if not run_dirs:
        raise ValueError("no run directories given")
    runs = load_runs(run_dirs)
    out.mkdir(parents=True, exist_ok=True)
    media = build_media(runs, out, progress)
    cases = find_cases(runs, case_paths)
    for run in runs:
        (out / run.page).write_text(render_run(run, media, cases), encoding="utf-8")
    files, note = draw_figures(runs, out, gpu_usd_per_hour)
    index = out / INDEX
    index.write_text(render_index(runs, figures_section(files, note)), encoding="utf-8")
    return index
