"""Small TempViz prompt tables in the authors' format (their headers, a few rows each),
so the tests never need the real 7,940-row release."""

from __future__ import annotations

import csv
import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from tests.fake_openai import ChatServer

REPLY = "Just reply with 'yes' or 'no'."
HEADERS: dict[str, list[str]] = {
    "Animals": ["index", "subject", "lifespan", "anAge", "prompttemplate", "promptcategory",
                "imperative", "prompt", "difficulty", "time", "goldenrecordImages",
                "expectedValue", "annotation_prompt_0", "annotation_prompt_1",
                "annotation_prompt_2"],
    "Artworks": ["index", "subject", "periodstart", "periodend", "time", "imperative",
                 "prompttemplate", "promptcategory", "prompt", "difficulty",
                 "goldenrecordImages", "expectedValue", "goldenrecordImages",
                 "annotation_prompt_0", "annotation_prompt_1", "annotation_prompt_2"],
    "Buildings": ["index", "subject", "DemolitionDate", "goldenrecordImages", "promptcategory",
                  "BuildingCoordinates", "BuildingCountry", "RandomBefore", "RandomAfter",
                  "BuildingCoordinates.1", "lon", "lat", "commonsCategory",
                  "isInGoogleLandmark", "inception", "WikipediaPagesCount", "prompt",
                  "Imperative", "PromptTemplate", "difficulty", "currentState",
                  "expectedValue", "annotation_prompt_0", "annotation_prompt_1",
                  "annotation_prompt_2"],
    "Landscapes": ["index", "promptcategory", "timecategory", "imperative", "temporalvalue",
                   "daytimevalue", "subject", "prompt", "difficulty", "prompttemplate",
                   "expectedValue", "annotation_prompt_0", "annotation_prompt_1",
                   "annotation_prompt_2"],
    "Maps": ["index", "promptcategory", "place", "suggestion", "imperative", "prompttemplate",
             "prompt", "difficulty", "annotation_prompt_0", "annotation_prompt_1",
             "annotation_prompt_2"],
}
# (index, subject, prompt, prompt category, difficulty, temporal hint, extra columns)
ROWS: dict[str, list[tuple[str, str, str, str, str, str, dict[str, str]]]] = {
    "Animals": [
        ("0", "Aardvark", "Create a photorealistic image of an Aardvark that is one month old.",
         "youth", "1", "one month old",
         {"lifespan": "23.0", "time": "1 month", "expectedValue": "tiny,infant,baby,tiny"}),
        ("1", "Aardvark", "Create a photorealistic image of an Aardvark that is 24 years old.",
         "unrealistic age", "2", "24 years old",
         {"lifespan": "23.0", "time": "lifespan*0.8", "expectedValue": "elderly,grey"}),
        ("7", "Brown Bear", "Give me a photorealistic image of a Brown Bear that is 12.5 years "
         "old.", "realistic age", "1", "12.5 years old",
         {"lifespan": "25.0", "time": "0.5*lifespan", "expectedValue": "adult,strong"}),
    ],
    "Artworks": [
        ("0", "Ancient Art", "Produce a work of art that exemplifies a style popular in Western "
         "cultures, during 1250 BC.", "year", "2", "1250 BC",
         {"periodstart": "-3000", "periodend": "500", "expectedValue": "symbolic,ritual"}),
        ("5", "Baroque Art", "Produce a work of art in the style of the Baroque period.",
         "period", "1", "Baroque", {"periodstart": "1600", "periodend": "1750"}),
    ],
    "Buildings": [
        ("0", "26 Commissars Memorial", "Create a photorealistic image of the 26 Commissars "
         "Memorial in Azerbaijan on 11/17/1976", "random before", "2", "the building at the "
         "specific date", {"DemolitionDate": "01/01/2009", "currentState": "demolished",
                           "expectedValue": "ruined,rubble"}),
        ("3", "26 Commissars Memorial", "Create a photorealistic image of the 26 Commissars "
         "Memorial in Azerbaijan after 01/01/2009", "after", "1", "the building at the "
         "specific date", {"DemolitionDate": "01/01/2009", "currentState": "demolished",
                           "expectedValue": "ruined,rubble"}),
    ],
    "Landscapes": [
        ("0", "a forest", "Create a photorealistic image of a forest in europe in january ",
         "Seasonality", "2", "january",
         {"timecategory": "Month", "temporalvalue": "january",
          "expectedValue": "frosty,snowy,frosty,snowy"}),
        ("80", "a lake", "Generate a photorealistic image of a lake in europe at dusk ",
         "Daytime", "1", "dusk", {"timecategory": "Daytime", "daytimevalue": "dusk",
                                  "expectedValue": "twilight,dim light"}),
    ],
    "Maps": [
        ("0", "Map of europe", "Create a realistic map of europe in 1914", "maps", "1",
         "a map depicting the correct borders of 1914", {"place": "europe",
                                                          "suggestion": "1914"}),
        ("1", "Map of europe", "Create a realistic map of europe in 1939", "maps", "1",
         "a map depicting the correct borders of 1939", {"place": "europe",
                                                          "suggestion": "1939"}),
    ],
}
COUNTS = {category: len(rows) for category, rows in ROWS.items()}
TOTAL = sum(COUNTS.values())


def questions(subject: str, prompt: str, hint: str) -> dict[str, str]:
    return {
        "annotation_prompt_0": f"Is the following subject present in the image: '{subject}'? "
                               f"{REPLY}",
        "annotation_prompt_1": f"Is the image without any visual generation errors? {REPLY}",
        "annotation_prompt_2": f"Is the image correct for the following prompt: '{prompt}'? Is "
                               f"the correct temporal knowledge applied (i.e. {hint})? {REPLY}",
    }


def rows(category: str) -> list[list[str]]:
    header = HEADERS[category]
    out = []
    for index, subject, prompt, promptcategory, difficulty, hint, extra in ROWS[category]:
        values = {"index": index, "subject": subject, "prompt": prompt,
                  "promptcategory": promptcategory, "difficulty": difficulty,
                  "imperative": prompt.split(" a ")[0], **questions(subject, prompt, hint),
                  **extra}
        if category == "Maps":
            values.pop("subject")
        out.append([values.get(column, "") for column in header])
    return out


def write_tables(directory: Path, categories: Sequence[str] = tuple(ROWS)) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for category in categories:
        with open(directory / f"{category}.csv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(HEADERS[category])
            writer.writerows(rows(category))
    return directory


def write_images(reports: Path, model: str, items: Sequence[str]) -> Path:
    """Stored TempViz images of one model, as the suite writes them (an image and its record
    each, a colour of their own), under ``reports``; returns ``reports``."""
    folder = reports / model / "tempviz" / "images"
    folder.mkdir(parents=True, exist_ok=True)
    for n, item in enumerate(items):
        Image.new("RGB", (16, 16), (40 * n % 256, 90, 200)).save(folder / f"{item}.png")
        (folder / f"{item}.json").write_text(json.dumps({"model": model, "id": item}))
    return reports


def fail_after(server: ChatServer, answered: int, reply: Callable[[dict[str, Any]], str]
               ) -> None:
    """The server answers ``answered`` requests with ``reply``, then fails every later one
    with a 500 (a run killed part way, as the next run sees it)."""
    count = [0]
    lock = threading.Lock()

    def respond(request: dict[str, Any]) -> str:
        with lock:
            count[0] += 1
            if count[0] == answered:
                server.state.fault_rate = 1.0
                server.state.fault_kinds = ("500",)
        return reply(request)

    server.state.responder = respond
