"""``imagetime baseline clipscore|caption``: the parser; the runner is ``runs.py``."""

from __future__ import annotations

import argparse
from typing import Any

from .defaults import DEFAULT_CAPTIONER, DEFAULT_CLIP, DEFAULT_EMBEDDER
from .prompts import DEFAULT_STRIP, STRIPS


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN", help="Model directories "
                        "(<out>/<model>/ with images/), run directories or output directories.")
    parser.add_argument("--cases", action="append", default=[], metavar="PATH",
                        help="Case files or directories for prompts that the image records do "
                        "not hold (default: the packaged cases); repeatable.")
    parser.add_argument("--prompts", metavar="TABLE", help="A CSV or JSONL table with "
                        "case_id and prompt columns, used before the cases.")
    parser.add_argument("--device", help="cpu, cuda, cuda:N or mps (default: cuda when "
                        "available, else cpu).")
    parser.add_argument("--batch-size", type=int, default=8, metavar="N",
                        help="Images per forward pass (default 8).")
    parser.add_argument("-o", "--out", metavar="TABLE.csv", help="Write the table here "
                        "(default: print it).")
    parser.add_argument("--json", action="store_true", help="Print the rows and their mean "
                        "as JSON.")
    parser.add_argument("--strip", choices=tuple(STRIPS), default=DEFAULT_STRIP,
                        help="What is removed from the start of a prompt before it is "
                        "compared: imperative (the TempViz paper: 'Create', 'Give me', ...; "
                        "default), imperative-and-medium (also 'a photorealistic image of') "
                        "or none.")


def add_parser(sub: Any) -> None:
    baseline = sub.add_parser("baseline", help="Baseline metrics of stored images: CLIPScore "
                              "and caption similarity, as a table for imagetime agree.")
    metrics = baseline.add_subparsers(dest="metric", required=True)
    clip = metrics.add_parser("clipscore", help="CLIPScore: 2.5 * max(cos(image, prompt), 0) "
                              "with a CLIP model.")
    clip.add_argument("--model", default=DEFAULT_CLIP, metavar="ID_OR_PATH",
                      help=f"CLIP model id or local folder (default {DEFAULT_CLIP}).")
    caption = metrics.add_parser("caption", help="Caption similarity: cosine of sentence "
                                 "embeddings of a caption of the image and the prompt.")
    caption.add_argument("--captioner", default=DEFAULT_CAPTIONER, metavar="ID_OR_PATH",
                         help=f"BLIP captioner id or local folder (default {DEFAULT_CAPTIONER}).")
    caption.add_argument("--embedder", default=DEFAULT_EMBEDDER, metavar="ID_OR_PATH",
                         help=f"Sentence embedder id or local folder (default {DEFAULT_EMBEDDER}).")
    for parser in (clip, caption):
        _add_common(parser)
        parser.set_defaults(runner="pytest_imagetime.research.baselines.runs:run",
                            writes=("out", "file"))
