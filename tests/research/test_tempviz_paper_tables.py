"""The TempViz paper's automatic-method tables rebuilt from label files shaped like the
authors': 500 images, 100 a category, 20 a category and model, one row each with the people's
Q1-Q3 and one method table per judge setting with its whole-prompt answer.

The authors' release holds the prompts only (no labels, no images, no judge answers), so the
files are built from the confusion counts that the published numbers force. Macro P / R / F1
of two classes pins a 2x2 table almost uniquely: with 100 images a category, every category
row of Tables 12-13 has exactly one confusion table once the number of people's "yes" per
category is fixed, and the 12 settings agree on one such number per category (Landscapes 63,
Animals 42, Artworks 45, Buildings 23, Maps 5: 178 of 500). Summing the category tables then
gives the overall table, which must reproduce Table 4. The tests say, number by number,
which published values ``imagetime tempviz prf`` reproduces from such files.
"""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from pytest_imagetime.cli import main
from pytest_imagetime.research.tempviz_paper.significance import point_biserial_test

MODELS = ("FLUX", "SDXL-B", "SDXL-T", "SDv1.5", "SDv3.5")
CATEGORIES = ("Animals", "Artworks", "Buildings", "Landscapes", "Maps")
PER_CATEGORY = 100
POSITIVES = {"Landscapes": 63, "Animals": 42, "Artworks": 45, "Buildings": 23, "Maps": 5}
# (true positives, false positives) per category, the only tables the published rows allow
# with POSITIVES; None where no table of 100 images gives the published row.
COUNTS: dict[str, dict[str, tuple[int, int] | None]] = {
    "Qwen-VL 0-shot Simple": {"Landscapes": (12, 2), "Animals": (1, 0), "Artworks": (40, 24),
                              "Buildings": (4, 13), "Maps": (2, 3)},
    "Qwen-VL 0-shot Instructed": {"Landscapes": (27, 8), "Animals": None,
                                  "Artworks": (44, 35), "Buildings": (5, 16), "Maps": None},
    "Qwen-VL 3-shot Simple": {"Landscapes": (47, 15), "Animals": (4, 3), "Artworks": (42, 30),
                              "Buildings": (10, 29), "Maps": (2, 31)},
    "Qwen-VL 3-shot Instructed": {"Landscapes": (41, 9), "Animals": (26, 6),
                                  "Artworks": (41, 30), "Buildings": (11, 42), "Maps": (2, 21)},
    "GPT-4o mini 0-shot Simple": {"Landscapes": (17, 5), "Animals": (13, 2),
                                  "Artworks": (31, 15), "Buildings": (4, 7), "Maps": (2, 20)},
    "GPT-4o mini 0-shot Instructed": {"Landscapes": (19, 5), "Animals": (8, 1),
                                      "Artworks": (39, 22), "Buildings": (3, 13),
                                      "Maps": (2, 26)},
    "GPT-4o mini 3-shot Simple": {"Landscapes": (26, 6), "Animals": (7, 2),
                                  "Artworks": (43, 29), "Buildings": (3, 6), "Maps": (2, 28)},
    "GPT-4o mini 3-shot Instructed": {"Landscapes": (21, 6), "Animals": (2, 1),
                                      "Artworks": (38, 21), "Buildings": (4, 3),
                                      "Maps": (1, 37)},
    "GPT-5 0-shot Simple": {"Landscapes": (33, 6), "Animals": (2, 2), "Artworks": (34, 17),
                            "Buildings": (3, 0), "Maps": (0, 2)},
    "GPT-5 0-shot Instructed": {"Landscapes": (31, 5), "Animals": (8, 2), "Artworks": (39, 16),
                                "Buildings": (1, 0), "Maps": (0, 2)},
    "GPT-5 3-shot Simple": {"Landscapes": (41, 3), "Animals": (10, 11), "Artworks": (37, 16),
                            "Buildings": (4, 0), "Maps": (0, 2)},
    "GPT-5 3-shot Instructed": {"Landscapes": (33, 5), "Animals": (14, 4), "Artworks": (37, 19),
                                "Buildings": (3, 0), "Maps": (0, 4)},
}
# Tables 12-13 (two decimals, one for the rows printed so) and Table 4 (one decimal).
PUBLISHED: dict[str, dict[str, str]] = {
    "Qwen-VL 0-shot Simple": {"Landscapes": "63.2/56.8/44.0", "Animals": "79.3/51.2/39.3",
                              "Artworks": "74.3/72.6/70.8", "Buildings": "50.3/50.3/50.0",
                              "Maps": "68.4/68.4/68.4", "overall": "64.3/60.1/60.0"},
    "Qwen-VL 0-shot Instructed": {"Landscapes": "60.9/60.6/56.0", "Animals": "70.6/63.6/62.6",
                                  "Artworks": "75.5/67.1/61.8", "Buildings": "50.5/50.5/50.5",
                                  "Maps": "52.3/54.7/52.5", "overall": "64.8/64.4/64.6"},
    "Qwen-VL 3-shot Simple": {"Landscapes": "66.85/67.03/66.93", "Animals": "58.14/52.18/44.59",
                              "Artworks": "73.81/69.39/66.02", "Buildings": "52.16/52.91/50.91",
                              "Maps": "50.79/53.68/44.77", "overall": "61.9/62.7/62.0"},
    "Qwen-VL 3-shot Instructed": {"Landscapes": "69.00/70.38/68.47",
                                  "Animals": "78.86/75.78/76.40",
                                  "Artworks": "71.98/68.28/65.11",
                                  "Buildings": "47.61/46.64/42.70",
                                  "Maps": "52.40/58.95/50.17", "overall": "65.9/67.2/65.8"},
    "GPT-4o mini 0-shot Simple": {"Landscapes": "59.15/56.74/47.83",
                                  "Animals": "76.27/63.75/61.97",
                                  "Artworks": "70.73/70.81/70.76",
                                  "Buildings": "57.51/54.15/53.93",
                                  "Maps": "52.62/59.47/50.76", "overall": "64.4/61.2/61.5"},
    "GPT-4o mini 0-shot Instructed": {"Landscapes": "60.64/58.32/50.16",
                                      "Animals": "75.76/58.66/53.94",
                                      "Artworks": "74.27/73.33/71.90",
                                      "Buildings": "47.47/48.08/47.44",
                                      "Maps": "51.49/56.32/47.38",
                                      "overall": "61.0/59.5/59.8"},
    "GPT-4o mini 3-shot Simple": {"Landscapes": "63.42/62.53/56.89",
                                  "Animals": "69.66/56.61/51.31",
                                  "Artworks": "76.29/71.41/68.08",
                                  "Buildings": "55.68/52.63/51.64",
                                  "Maps": "51.19/55.26/46.32", "overall": "62.7/61.7/62.0"},
    "GPT-4o mini 3-shot Instructed": {"Landscapes": "60.12/58.56/51.52",
                                      "Animals": "62.71/51.52/41.22",
                                      "Artworks": "73.67/73.13/71.96",
                                      "Buildings": "68.36/56.75/56.86",
                                      "Maps": "48.09/40.53/39.27",
                                      "overall": "59.3/58.0/58.1"},
    "GPT-5 0-shot Simple": {"Landscapes": "67.72/68.08/63.99", "Animals": "54.17/50.66/40.71",
                            "Artworks": "72.11/72.32/71.96", "Buildings": "89.69/56.52/55.79",
                            "Maps": "47.45/48.95/48.19", "overall": "73.2/66.0/66.8"},
    "GPT-5 0-shot Instructed": {"Landscapes": "68.06/67.85/63.00",
                                "Animals": "71.11/57.80/53.22",
                                "Artworks": "78.79/78.79/78.00",
                                "Buildings": "88.89/52.17/47.92",
                                "Maps": "47.45/48.95/48.19", "overall": "75.5/68.3/69.4"},
    "GPT-5 3-shot Simple": {"Landscapes": "76.95/78.49/74.88", "Animals": "53.56/52.42/50.18",
                            "Artworks": "76.40/76.57/75.99", "Buildings": "90.10/58.70/59.32",
                            "Maps": "47.45/48.95/48.19", "overall": "75.7/70.9/72.0"},
    "GPT-5 3-shot Instructed": {"Landscapes": "69.23/69.43/65.00",
                                "Animals": "71.82/63.22/61.90",
                                "Artworks": "73.94/73.84/73.00",
                                "Buildings": "89.69/56.52/55.79",
                                "Maps": "47.40/47.89/47.64", "overall": "74.6/69.5/70.5"},
}
# Table 4's overall rows that no 500 answered images with these labels give; each fits the
# same labels with a few images left out (unanswered, presumably): (images, people's yes,
# true positives, false positives), the largest such subset.
NOT_FROM_500 = {"Qwen-VL 0-shot Instructed": (499, 178, 93, 75),
                "GPT-4o mini 0-shot Instructed": (495, 174, 69, 66),
                "GPT-5 0-shot Simple": (489, 172, 69, 26)}
RANDOM = ("48.4/48.3/47.7", (79, 154))  # Table 4's random baseline and a table that gives it


def human_rows() -> list[dict[str, str]]:
    """The people's labels: Q2 AND Q3 yes for the first POSITIVES of each category; a few
    images with the subject but the wrong time, and the reverse, so Q2 and Q3 differ."""
    rows = []
    for category in CATEGORIES:
        for i in range(PER_CATEGORY):
            both = i < POSITIVES[category]
            q2 = both or (i % 9 != 0 and i % 4 != 0)  # the subject without its time
            q3 = both or i % 9 == 0  # the time without the subject
            rows.append({"model": MODELS[i % len(MODELS)], "category": category,
                         "index": str(i), "q1": "yes" if i % 3 else "no",
                         "q2": "yes" if q2 else "no", "q3": "yes" if q3 else "no"})
    return rows


def method_rows(counts: dict[str, tuple[int, int] | None]) -> list[dict[str, str]]:
    """The suite's answers.csv for one setting: q3 is the whole-prompt answer."""
    rows = []
    for category in CATEGORIES:
        tp, fp = counts[category] or (0, 0)
        positives = POSITIVES[category]
        for i in range(PER_CATEGORY):
            yes = i < tp if i < positives else i - positives < fp
            rows.append({"model": MODELS[i % len(MODELS)], "judge": "j", "id": f"{category}-{i}",
                         "category": category, "index": str(i), "q1": "yes",
                         "q2": "yes", "q3": "yes" if yes else "no"})
    return rows


def write(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def shown(values: dict[str, float], printed: str) -> str:
    """Our numbers rounded as the paper prints the row."""
    places = len(printed.split("/")[0].split(".")[1])
    return "/".join(f"{values[k]:.{places}f}" for k in
                    ("macro_precision", "macro_recall", "macro_f1"))


def prf(tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str) -> dict[str, Any]:
    human = write(tmp_path / "human.csv", human_rows())
    answers = write(tmp_path / "answers.csv", method_rows(COUNTS[setting]))
    capsys.readouterr()
    assert main(["tempviz", "prf", str(human), str(answers), "--json"]) == 0
    rows: dict[str, Any] = json.loads(capsys.readouterr().out)["comparisons"][
        "q2_and_q3 vs q3"]["rows"]
    return rows


def test_the_label_files_have_the_papers_shape() -> None:
    rows = human_rows()
    assert len(rows) == 500
    cells = {(r["category"], r["model"]) for r in rows}
    assert len(cells) == 25 and all(
        sum(1 for r in rows if (r["category"], r["model"]) == c) == 20 for c in cells)
    both = sum(r["q2"] == "yes" and r["q3"] == "yes" for r in rows)
    assert both == sum(POSITIVES.values()) == 178


@pytest.mark.parametrize("setting", list(PUBLISHED))
def test_tables_4_12_13_from_label_files(setting: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    rows = prf(tmp_path, capsys, setting)
    for category in CATEGORIES:
        printed = PUBLISHED[setting][category]
        if COUNTS[setting][category] is None:
            continue  # no 100-image table with these labels gives this row (see the docs)
        assert shown(rows[category], printed) == printed, category
    printed = PUBLISHED[setting]["overall"]
    if setting in NOT_FROM_500:
        assert shown(rows["overall"], printed) != printed
    else:
        assert shown(rows["overall"], printed) == printed
    assert rows["overall"]["n"] == 500


@pytest.mark.parametrize(("setting", "left_out"), list(NOT_FROM_500.items()))
def test_overall_rows_that_need_images_left_out(setting: str,
                                                left_out: tuple[int, int, int, int],
                                                tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """These overall rows come out of the same people's labels once a few images have no
    answer: dropping them (an empty q3) reproduces the published row."""
    images, positives, tp, fp = left_out
    human = human_rows()
    drop_yes, drop_no = 178 - positives, 500 - images - (178 - positives)
    answers = method_rows(dict.fromkeys(CATEGORIES))
    yes_rows = [i for i, r in enumerate(human) if r["q2"] == r["q3"] == "yes"]
    no_rows = [i for i, r in enumerate(human) if not r["q2"] == r["q3"] == "yes"]
    for i in yes_rows[:drop_yes] + no_rows[:drop_no]:
        answers[i]["q3"] = ""
    kept_yes, kept_no = yes_rows[drop_yes:], no_rows[drop_no:]
    for n, i in enumerate(kept_yes):
        answers[i]["q3"] = "yes" if n < tp else "no"
    for n, i in enumerate(kept_no):
        answers[i]["q3"] = "yes" if n < fp else "no"
    write(tmp_path / "human.csv", human)
    write(tmp_path / "answers.csv", answers)
    capsys.readouterr()
    assert main(["tempviz", "prf", str(tmp_path / "human.csv"), str(tmp_path / "answers.csv"),
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["comparisons"]["q2_and_q3 vs q3"]
    printed = PUBLISHED[setting]["overall"]
    assert result["rows"]["overall"]["n"] == images and result["missing"] == 500 - images
    assert shown(result["rows"]["overall"], printed) == printed


def test_the_random_baseline_row_is_a_table_our_scores_reproduce(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its draw cannot be repeated (no seed or class distribution is given), but a table of
    the same labels that gives the row is scored as printed."""
    printed, (tp, fp) = RANDOM
    answers = method_rows(dict.fromkeys(CATEGORIES))
    human = human_rows()
    yes_rows = [i for i, r in enumerate(human) if r["q2"] == r["q3"] == "yes"]
    no_rows = [i for i, r in enumerate(human) if not r["q2"] == r["q3"] == "yes"]
    for n, i in enumerate(yes_rows):
        answers[i]["q3"] = "yes" if n < tp else "no"
    for n, i in enumerate(no_rows):
        answers[i]["q3"] = "yes" if n < fp else "no"
    write(tmp_path / "human.csv", human)
    write(tmp_path / "answers.csv", answers)
    capsys.readouterr()
    assert main(["tempviz", "prf", str(tmp_path / "human.csv"), str(tmp_path / "answers.csv"),
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["comparisons"]["q2_and_q3 vs q3"]["rows"]
    assert shown(rows["overall"], printed) == printed


TABLE3 = {"CLIPScore": {"q2": 0.0158, "q3": -0.0329, "q2_and_q3": -0.0394},
          "Captioning": {"q2": 0.1571, "q3": -0.1841, "q2_and_q3": -0.0955}}
STARRED = {("Captioning", "q2"), ("Captioning", "q3"), ("Captioning", "q2_and_q3")}


def scores_with_correlation(labels: list[bool], r: float, seed: int) -> list[float]:
    """Scores whose Pearson r with ``labels`` is exactly ``r``: the standardised labels plus
    noise made orthogonal to them."""
    rng = random.Random(seed)
    n = len(labels)
    b = [1.0 if v else 0.0 for v in labels]
    mb = sum(b) / n
    zb = [x - mb for x in b]
    sb = math.sqrt(sum(x * x for x in zb))
    zb = [x / sb for x in zb]
    e = [rng.gauss(0, 1) for _ in range(n)]
    me = sum(e) / n
    e = [x - me for x in e]
    dot = sum(x * y for x, y in zip(e, zb, strict=True))
    e = [x - dot * y for x, y in zip(e, zb, strict=True)]
    se = math.sqrt(sum(x * x for x in e))
    return [0.3 + 0.1 * (r * y + math.sqrt(1 - r * r) * x / se)
            for x, y in zip(e, zb, strict=True)]


@pytest.mark.parametrize("method", list(TABLE3))
def test_table_3_significance_follows_from_the_t_test_on_500_images(
        method: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The r values cannot be recomputed without the images; on scores with the published r
    and the 500 labels, the two-sided t-test at 0.05 marks exactly the starred values."""
    human = human_rows()
    write(tmp_path / "human.csv", human)
    for target, r in TABLE3[method].items():
        if target == "q2_and_q3":
            labels = [h["q2"] == h["q3"] == "yes" for h in human]
        else:
            labels = [h[target] == "yes" for h in human]
        values = scores_with_correlation(labels, r, seed=len(target))
        rows = [{"model": h["model"], "case_id": f"{h['category']}-{h['index']}",
                 "score": f"{v:.12f}"} for h, v in zip(human, values, strict=True)]
        write(tmp_path / "scores.csv", rows)
        capsys.readouterr()
        assert main(["tempviz", "pbs", str(tmp_path / "human.csv"), str(tmp_path / "scores.csv"),
                     "--json"]) == 0
        result = json.loads(capsys.readouterr().out)[target]["overall"]
        assert f"{result['r']:.4f}" == f"{r:.4f}"
        assert result["significant"] is ((method, target) in STARRED)
        assert point_biserial_test(values, labels).significant() is result["significant"]
