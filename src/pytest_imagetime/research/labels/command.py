"""``imagetime label export|import|judge``: the parser; each names its runner in ``runners.py``."""

from __future__ import annotations

from typing import Any

from .columns import FORMATS

RUNNERS = "pytest_imagetime.research.labels.runners"


def add_parser(sub: Any) -> None:
    label = sub.add_parser("label", help="Human labels: export a form, import the answers, "
                           "write the judge's answers in the same columns.")
    commands = label.add_subparsers(dest="label_command", required=True)

    export = commands.add_parser("export", help="A stratified sample of stored sheets as a "
                                 "self-contained HTML form (form.html) and items.csv.")
    export.add_argument("runs", nargs="+", help="Run directories, report.json files or output "
                        "directories.")
    export.add_argument("--sample", type=int, required=True, metavar="N",
                        help="How many items (stratified by domain and model).")
    export.add_argument("--seed", type=int, default=0, help="Seed of the draw (default 0).")
    export.add_argument("-o", "--out", required=True, metavar="DIR", help="Folder to write.")
    export.add_argument("--annotator", help="Annotator name filled into the form.")
    export.add_argument("--max-px", type=int, default=1024,
                        help="Scale larger sheets down to this many pixels (default 1024).")

    imp = commands.add_parser("import", help="Filled answer CSVs into one checked table.")
    imp.add_argument("files", nargs="+", help="CSV files downloaded from the form, or "
                     "items.csv filled in by hand.")
    imp.add_argument("-o", "--out", required=True, metavar="TABLE.csv", help="Table to write.")
    imp.add_argument("--annotator", help="Keep only this annotator's answers.")
    imp.set_defaults(runner=f"{RUNNERS}:import_labels", writes=("out", "file"))

    judge = commands.add_parser("judge", help="The judge's answers of stored runs in the "
                                "columns of the form.")
    judge.add_argument("runs", nargs="+", help="Run directories, report.json files or output "
                       "directories.")
    judge.add_argument("-o", "--out", required=True, metavar="TABLE.csv", help="Table to write.")
    judge.set_defaults(runner=f"{RUNNERS}:write_judge_table", writes=("out", "file"))

    for parser in (export, imp):
        parser.add_argument("--cases", action="append", default=[], metavar="PATH",
                            help="Case files or directories (default: the packaged cases); "
                            "repeatable.")
    for parser in (imp, judge):
        parser.add_argument("--format", choices=FORMATS, default="wide",
                            help="wide: one row per item; long: one row per predicate answer "
                            "(default wide).")
    export.set_defaults(runner=f"{RUNNERS}:export_form", writes=("out", "folder"))
