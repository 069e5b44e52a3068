"""The plugin's own JUnit XML: one test suite per run.

Model or judge errors are ``<error>``, unmet benchmark conditions ``<failure>``, so CI
dashboards tell infrastructure problems from model regressions. The file keeps to the JUnit
schema Jenkins' xUnit plugin validates with (``junit-10.xsd``), which has no
``<properties>`` inside ``<testcase>``: each case's scores are its ``<system-out>`` (Jenkins
shows it on the case's page; GitLab shows it, and the sheet as an attachment, for failures),
each run's aggregate is its suite's ``<properties>``. Under ``junit_family=xunit1`` the cases
also carry their ``imagetime.*`` properties, as pytest's own file does there.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..engine.record import PREFIX, ItemRecord, Scalar
from ..rubric.facts import LEVEL_KEYS
from ..store.paths import with_setting
from .json_report import record_from_json
from .junit_xml import JunitCase, status_counts, write_junit_xml


def _suite_name(model: str, setting: str, judge: str) -> str:
    return f"imagetime[{with_setting(model, setting)}|{judge}]"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def attachment_path(image: str, root: Path | None) -> str:
    """The sheet's path as GitLab takes an attachment: relative to the job's directory (the
    one pytest started in) when it lies below it."""
    path = Path(image)
    if root is not None and path.is_absolute() and path.is_relative_to(root):
        return path.relative_to(root).as_posix()
    return path.as_posix()


def case_output(record: ItemRecord, root: Path | None = None) -> str:
    """A case's scores as a person reads them on a CI page, and its sheet as an attachment
    (GitLab's ``[[ATTACHMENT|path]]``, relative to ``root``)."""
    head = f"{record.key}: {record.status}"
    lines = [f"{head}: {record.error}" if record.status == "error" and record.error else head]
    if record.overall is not None or record.c_mean is not None:
        levels = " ".join(f"{k} {_fmt(record.tree.get(k))}" for k in LEVEL_KEYS)
        lines.append(f"scores: Overall {_fmt(record.overall)} | C mean {_fmt(record.c_mean)} | "
                     f"D mean {_fmt(record.d_mean)} | gate {_fmt(record.tree.get('gate'))} | "
                     f"{levels}")
        lines.append("dims: " + " ".join(f"{d}={v}" for d, v in record.scores.items()
                                         if v is not None))
        lines.append(f"labels: {', '.join(record.labels) or 'none'}")
        for title, entries in (("caps", record.caps),
                               ("predicates failed", record.predicates_failed),
                               ("forbidden states observed", record.forbidden_observed)):
            if entries:
                lines.append(f"{title}: {'; '.join(entries)}")
    lines.append(f"judge: {record.judge}" + (f" ({record.judge_model})"
                                              if record.judge_model else ""))
    if record.image:
        lines.append(f"image: {record.image}")
        lines.append(f"[[ATTACHMENT|{attachment_path(record.image, root)}]]")
    return "\n".join(lines)


def failure_summary(text: str) -> str:
    """A failure's one-line message: its first line that says something."""
    return next((line.strip() for line in text.splitlines() if line.strip()),
                "benchmark conditions not met")


def junit_case(record: ItemRecord, messages: Mapping[str, str],
               case_properties: bool = False, root: Path | None = None) -> JunitCase:
    message = messages.get(record.key, record.error or "")
    if record.status == "failed":
        summary = failure_summary(message)
    else:
        summary = record.error or "error"
    return JunitCase(classname=record.case_file.replace("/", "."),
                     name=f"{record.case_id}[{record.model}]",
                     seconds=(record.generation_s or 0) + (record.judge_s or 0),
                     properties=record.to_properties() if case_properties else (),
                     status=record.status, message=message, summary=summary,
                     output=case_output(record, root))


def run_properties(report: Mapping[str, Any]) -> list[tuple[str, Scalar]]:
    """A run's aggregate as its suite's properties: what it ran and how it scored."""
    manifest, aggregate = report["manifest"], report["aggregate"]
    values: dict[str, Any] = {
        "model": manifest["model"]["spec"], "judge": manifest["judge"]["name"],
        "judge_model": manifest["judge"]["config"].get("judge_model"),
        "setting": manifest["setting"], "rubric_version": report["rubric_version"],
        "n": aggregate["n"], "passed": aggregate["passed"], "failed": aggregate["failed"],
        "errors": aggregate["errors"], "overall": aggregate["overall"],
        "c_mean": aggregate["c_mean"], "d_mean": aggregate["d_mean"],
        **{f"tree.{k}": v for k, v in aggregate["tree"].items()},
        "cost_usd": aggregate.get("cost_usd"), "run_dir": manifest["run_dir"],
    }
    return [(f"{PREFIX}{key}", round(value, 4) if isinstance(value, float) else value)
            for key, value in values.items() if value is not None]


def pytest_suite_properties(reports: Sequence[Mapping[str, Any]]) -> list[tuple[str, Scalar]]:
    """The runs' aggregates for pytest's one suite: named ``imagetime[<model>|<judge>].<key>``."""
    pairs: list[tuple[str, Scalar]] = []
    for report in reports:
        manifest = report["manifest"]
        run = _suite_name(manifest["model"]["spec"], manifest["setting"],
                          manifest["judge"]["name"])
        pairs.extend((f"{run}.{name.removeprefix(PREFIX)}", value)
                     for name, value in run_properties(report))
    return pairs


def write_junit(path: Path, records: Sequence[ItemRecord], messages: Mapping[str, str],
                case_properties: bool = False) -> None:
    suites: dict[str, list[ItemRecord]] = {}
    for record in sorted(records, key=lambda r: r.key):
        suites.setdefault(_suite_name(record.model, record.setting, record.judge),
                          []).append(record)
    # Cases made as they are written: a run's properties need not all be in memory at once.
    write_junit_xml(path, "imagetime",
                    {name: (junit_case(r, messages, case_properties) for r in members)
                     for name, members in suites.items()},
                    {name: status_counts(r.status for r in members)
                     for name, members in suites.items()})


def write_junit_items(path: Path, runs: Iterable[Sequence[Mapping[str, Any]]],
                      messages: Mapping[str, str], case_properties: bool = False,
                      reports: Sequence[Mapping[str, Any]] = (),
                      root: Path | None = None) -> None:
    """``write_junit`` from the reports' items (each run's in key order, as a report holds
    them), the same text: each record is rebuilt as its case is written, so the session's
    records are never all in memory beside its reports. ``reports`` (whole reports) give
    their suites' properties."""
    suites: dict[str, list[Sequence[Mapping[str, Any]]]] = {}
    # In the order of each suite's first key, as write_junit's sort gives them.
    for items in sorted((items for items in runs if items), key=lambda items: items[0]["key"]):
        first = items[0]
        suites.setdefault(_suite_name(first["model"], first["setting"], first["judge"]),
                          []).append(items)
    properties: dict[str, list[tuple[str, Scalar]]] = {}
    for report in reports:
        manifest = report["manifest"]
        name = _suite_name(manifest["model"]["spec"], manifest["setting"],
                           manifest["judge"]["name"])
        # A suite of several reports (one spec, two run directories) names each one's run.
        properties.setdefault(name, []).extend(run_properties(report))

    def cases(runs: list[Sequence[Mapping[str, Any]]]) -> Iterator[JunitCase]:
        for item in heapq.merge(*runs, key=itemgetter("key")):
            yield junit_case(record_from_json(item), messages, case_properties, root)

    write_junit_xml(path, "imagetime", {name: cases(runs) for name, runs in suites.items()},
                    {name: status_counts(i["status"] for items in runs for i in items)
                     for name, runs in suites.items()}, properties)
