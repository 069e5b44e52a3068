"""Human labels: the sample, the form (in a real browser), the answers read back, the judge's
answers in the same columns, and ``imagetime agree`` over them."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.cli import main
from pytest_imagetime.research.labels.sample import allocate, stratified_sample
from tests.builders import case_dict, write_case_file
from tests.fake_openai import ServerState, chat_server

if TYPE_CHECKING:
    from selenium.webdriver.chrome.webdriver import WebDriver

HOSTILE = "<script>alert(1)</script>"
MODELS = ("procedural", "procedural:three-panels")
INSTALL = ("the browser test needs Debian's chromium and chromedriver, and selenium: "
           "apt-get update && apt-get install -y chromium chromium-driver && "
           "python3 -m pip install selenium")


# ---------------------------------------------------------------- sampling


@given(st.dictionaries(st.sampled_from("abcdefgh"), st.integers(0, 40), min_size=1),
       st.integers(0, 400))
def test_allocation_adds_up_and_stays_proportional(sizes: dict[str, int], total: int) -> None:
    counts = allocate(sizes, total)
    population = sum(sizes.values())
    assert sum(counts.values()) == min(total, population)
    assert all(0 <= counts[s] <= sizes[s] for s in sizes)
    if total >= len(sizes):
        assert all(counts[s] >= 1 for s in sizes if sizes[s] > 0)
    quotas = {s: total * n / population for s, n in sizes.items()} if population else {}
    if total <= population and quotas and all(q >= 1 for q in quotas.values() if q):
        assert all(abs(counts[s] - quotas[s]) < 1 for s in sizes)


@given(st.lists(st.tuples(st.sampled_from("DEF"), st.sampled_from("mn"), st.integers(0, 30)),
                unique=True, max_size=40),
       st.integers(0, 50), st.integers(0, 3), st.randoms())
def test_sample_is_stratified_and_repeatable(items: list[tuple[str, str, int]], total: int,
                                             seed: int, rng: Any) -> None:
    def draw(pool: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
        return stratified_sample(pool, total, seed, stratum=lambda i: i[:2],
                                 ident=lambda i: (i[1], str(i[2]), i[0]))

    chosen = draw(items)
    shuffled = list(items)
    rng.shuffle(shuffled)
    assert draw(shuffled) == chosen  # the seed decides, not the order the runs came in
    assert len(chosen) == len(set(chosen)) == min(total, len(items))
    strata = Counter(i[:2] for i in items)
    assert Counter(i[:2] for i in chosen) == +Counter(allocate(strata, total))


# ---------------------------------------------------------------- runs to label


@dataclass
class Runs:
    root: Path
    out: Path  # the output directory with every run

    def run(self, model: str, judge: str) -> Path:
        return self.out / model.replace(":", "-") / judge


def _pytest(root: Path, *args: str, env: dict[str, str] | None = None) -> None:
    run_env = {**os.environ, **(env or {}), "PYTEST_ADDOPTS": ""}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--imagetime-size=128", *args], cwd=root, env=run_env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert "report:" in done.stdout, done.stdout + done.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Two models (one breaks the 2x2 protocol) over two domains, judged by the pixel judge
    and by the vlm judge (a local fake server), which gives per-predicate verdicts."""
    root = tmp_path_factory.mktemp("label-runs")
    hostile = case_dict("kitchen-pour-water-2", variant=2)
    hostile["prompt"] += f" {HOSTILE}"
    hostile["predicates"][0]["text"] = f"the glass is empty {HOSTILE}"
    write_case_file(root / "kitchen.yaml", [case_dict("kitchen-pour-water-1"), hostile,
                                            case_dict("kitchen-pour-milk-1", concept="pour milk")])
    write_case_file(root / "garden.yaml", [
        case_dict("gardening-water-plant-1", concept="water a plant"),
        case_dict("gardening-water-plant-2", concept="water a plant", variant=2)],
        domain="Gardening")
    models = [f"--imagetime-model={m}" for m in MODELS]
    _pytest(root, "kitchen.yaml", "garden.yaml", *models, "--imagetime-judge=pixel")
    with chat_server(ServerState()) as server:
        _pytest(root, "kitchen.yaml", "garden.yaml", *models, "--imagetime-judge=vlm",
                "--imagetime-judge-model=judge-test",
                env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url})
    return Runs(root, root / "reports")


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _export(runs: Runs, capsys: pytest.CaptureFixture[str], out: Path, *extra: str,
            sample: int = 6, seed: int = 3) -> list[dict[str, str]]:
    code, _, err = _cli(capsys, "label", "export", str(runs.out), "--sample", str(sample),
                        "--seed", str(seed), "-o", str(out), "--cases", str(runs.root), *extra)
    assert code == 0, err
    return _rows(out / "items.csv")


# ---------------------------------------------------------------- export


def test_export_writes_a_stratified_sample(runs: Runs, capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    items = _export(runs, capsys, tmp_path / "a", "--annotator", "alice")
    assert len(items) == 6
    # Judges share a model's sheets: an item is a (model, case), never one per judge.
    assert len({(r["model"], r["case_id"]) for r in items}) == 6
    strata = Counter((r["domain"], r["model"]) for r in items)
    assert set(strata) == {(d, m) for d in ("Kitchen", "Gardening") for m in MODELS}
    # 10 sheets: 3 kitchen and 2 garden cases per model; 6 of them in proportion.
    assert sorted(strata.values()) == [1, 1, 2, 2]
    first = items[0]
    assert list(first)[:6] == ["item", "model", "case_id", "domain", "annotator",
                               "valid_sheet"]
    assert list(first)[-11:] == [f"C{i}" for i in range(10)] + ["notes"]
    assert all(r["annotator"] == "alice" for r in items)
    # Questions an item does not have are marked; the rest wait for answers.
    assert {r["C1"] for r in items} == {"n/a"}  # prompt-only: no reference to ground
    assert {r["C8"] for r in items} == {"n/a"}  # no constraint in these cases
    assert {r["C5"] for r in items} == {r["p1"] for r in items} == {""}

    again = _export(runs, capsys, tmp_path / "b", "--annotator", "alice")
    assert again == items
    assert (tmp_path / "a" / "form.html").read_bytes() == (tmp_path / "b" / "form.html")\
        .read_bytes()
    other = _export(runs, capsys, tmp_path / "c", "--annotator", "alice", seed=4)
    assert sorted(r["case_id"] + r["model"] for r in other) != \
        sorted(r["case_id"] + r["model"] for r in items)


def test_form_is_self_contained_blind_and_escaped(runs: Runs, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    _export(runs, capsys, tmp_path, sample=10)
    html = (tmp_path / "form.html").read_text(encoding="utf-8")
    sources = re.findall(r'\b(?:src|href)="([^"]*)"', html)
    assert len(sources) == 10 and all(s.startswith("data:image/png;base64,") for s in sources)
    assert "http://" not in html and "https://" not in html
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    # No judge output and no model name where an annotator reads: only in the data block.
    visible = re.sub(r'<script type="application/json" id="meta">.*?</script>', "", html,
                     flags=re.S)
    assert not re.search(r"procedural|pixel|vlm|rationale|C_mean|overall", visible)
    meta = json.loads(re.search(r'id="meta">(.*?)</script>', html, re.S).group(1))  # type: ignore[union-attr]
    assert {i["model"] for i in meta["items"]} == set(MODELS)
    assert meta["items"][0]["dims"] == ["C0", "C2", "C3", "C4", "C5", "C6", "C7", "C9"]


def test_a_predicate_an_item_lacks_is_n_a_in_items_csv(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """items.csv marks another case's predicate column n/a, as the form's CSV does: filled
    in a spreadsheet, every empty cell is a question the item has, and it imports."""
    fewer = case_dict("kitchen-pour-milk-1", concept="pour milk",
                      predicates=case_dict()["predicates"][:4])
    write_case_file(tmp_path / "kitchen.yaml", [case_dict(), fewer])
    _pytest(tmp_path, "kitchen.yaml", "--imagetime-model=procedural", "--imagetime-judge=pixel")
    code, _, err = _cli(capsys, "label", "export", str(tmp_path / "reports"), "--sample", "2",
                        "-o", str(tmp_path / "form"), "--cases", str(tmp_path),
                        "--annotator", "dana")
    assert code == 0, err
    rows = {r["case_id"]: r for r in _rows(tmp_path / "form" / "items.csv")}
    assert rows["kitchen-pour-milk-1"]["p5"] == "n/a"
    assert rows["kitchen-pour-water-1"]["p5"] == ""
    filled = tmp_path / "labels-dana.csv"
    answers = [{k: ("yes" if k == "valid_sheet" or k.startswith("p") else "7") if v == ""
                and k != "notes" else v for k, v in row.items()} for row in rows.values()]
    with filled.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(answers[0]))
        writer.writeheader()
        writer.writerows(answers)
    code, _, err = _cli(capsys, "label", "import", str(filled), "-o", str(tmp_path / "d.csv"),
                        "--cases", str(tmp_path))
    assert code == 0, err


def test_export_refuses_what_it_cannot_label(runs: Runs, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "label", "export", str(runs.out), "--sample", "3", "-o",
                        str(tmp_path))
    assert code == 2
    assert "not among the loaded cases" in err and "--cases" in err
    code, _, err = _cli(capsys, "label", "export", str(tmp_path / "nothing"), "--sample", "3",
                        "-o", str(tmp_path))
    assert code == 2 and "no such file or directory" in err
    code, _, err = _cli(capsys, "label", "export", str(runs.out), "--sample", "0", "-o",
                        str(tmp_path))
    assert code == 2 and "--sample" in err
    edited = tmp_path / "edited"
    edited.mkdir()
    shutil.copy(runs.root / "garden.yaml", edited)
    kitchen = (runs.root / "kitchen.yaml").read_text()
    (edited / "kitchen.yaml").write_text(kitchen.replace("the glass is full", "it is full"))
    code, _, err = _cli(capsys, "label", "export", str(runs.out), "--sample", "3", "-o",
                        str(tmp_path / "form"), "--cases", str(edited))
    assert code == 2 and "3 cases differ from the text their sheets were made from" in err
    assert not (tmp_path / "form").exists()


# ---------------------------------------------------------------- the judge's answers


def test_judge_table_uses_the_form_columns(runs: Runs, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "label", "judge", str(runs.out), "-o",
                        str(tmp_path / "judge.csv"))
    assert code == 0, err
    rows = _rows(tmp_path / "judge.csv")
    assert len(rows) == 20  # 2 models x 5 cases x 2 judges
    assert {r["annotator"] for r in rows} == {"pixel", "vlm"}
    pixel = {(r["model"], r["case_id"]): r for r in rows if r["annotator"] == "pixel"}
    vlm = [r for r in rows if r["annotator"] == "vlm"]
    # The pixel judge's gate: the three-panel sheets are no valid 2x2 sheet.
    assert {r["valid_sheet"] for k, r in pixel.items() if k[0] == MODELS[1]} == {"no"}
    assert {r["valid_sheet"] for k, r in pixel.items() if k[0] == MODELS[0]} == {"yes"}
    # The vlm judge answers every predicate and rates the dimensions; pixel gives no verdicts.
    assert {r[p] for r in vlm for p in ("p1", "p2", "p3", "p4", "p5")} == {"yes"}
    assert all(r["C2"].isdigit() and r["C1"] == "" for r in vlm)
    assert {r["p1"] for r in pixel.values()} == {""}
    assert "10 items have no per-predicate verdicts" in err

    code, _, err = _cli(capsys, "label", "judge", str(runs.run(MODELS[0], "vlm")), "-o",
                        str(tmp_path / "long.csv"), "--format", "long")
    assert code == 0, err
    long = _rows(tmp_path / "long.csv")
    assert list(long[0]) == ["model", "case_id", "domain", "annotator", "predicate",
                             "satisfied"]
    assert len(long) == 25 and {r["satisfied"] for r in long} == {"yes"}


# ---------------------------------------------------------------- answers read back


def _filled(items: list[dict[str, str]], who: str) -> list[dict[str, str]]:
    out = []
    for n, row in enumerate(items):
        answered = dict(row, annotator=who, valid_sheet="yes" if n % 2 else "no",
                        p1="unsure", p2="Yes", C5=str(n), C2="7", notes="a, \"quoted\" note")
        out.append(answered)
    return out


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_import_checks_and_normalises_answers(runs: Runs, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    items = _export(runs, capsys, tmp_path / "form")
    alice = _filled(items, "alice")
    alice[-1] = {k: ("" if k in ("valid_sheet", "p1", "p2", "C2", "C5") else v)
                 for k, v in alice[-1].items()}  # left unanswered: skipped
    bob = _filled(items, "bob")
    files = [_write(tmp_path / "alice.csv", alice), _write(tmp_path / "bob.csv", bob)]
    code, out, err = _cli(capsys, "label", "import", *map(str, files), "-o",
                          str(tmp_path / "human.csv"), "--cases", str(runs.root))
    assert code == 0, err
    assert "11 items from alice, bob; skipped 1 unanswered" in out
    rows = _rows(tmp_path / "human.csv")
    assert {r["p2"] for r in rows} == {"yes"} and {r["p1"] for r in rows} == {"unsure"}
    assert {r["C1"] for r in rows} == {""}  # n/a becomes missing, never a label
    assert rows[0]["notes"] == "a, \"quoted\" note"

    code, out, err = _cli(capsys, "label", "import", *map(str, files), "-o",
                          str(tmp_path / "bob-long.csv"), "--cases", str(runs.root),
                          "--annotator", "bob", "--format", "long")
    assert code == 0, err
    long = _rows(tmp_path / "bob-long.csv")
    assert {r["annotator"] for r in long} == {"bob"}
    assert Counter(r["satisfied"] for r in long)["unsure"] == 6


def test_import_rejects_bad_answers_with_their_line(runs: Runs, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    items = _filled(_export(runs, capsys, tmp_path / "form"), "alice")
    items[0]["C5"] = "11"
    items[1]["valid_sheet"] = "maybe"
    items[2]["case_id"] = "no-such-case"
    items[3]["p9"] = "yes"
    items[4]["p3"] = "perhaps"
    items[5] = dict(items[0], C5="3")  # the same item twice
    for row in items:
        row.setdefault("p9", "")
    path = _write(tmp_path / "bad.csv", items)
    code, _, err = _cli(capsys, "label", "import", str(path), "-o", str(tmp_path / "t.csv"),
                        "--cases", str(runs.root))
    assert code == 2
    assert f"{path}:2: C5 '11' is not an integer from 0 to 10" in err
    assert f"{path}:3: valid_sheet 'maybe' is not yes or no" in err
    assert f"{path}:4: unknown case id 'no-such-case'" in err
    assert f"{path}:5: case {items[3]['case_id']} has no predicate 'p9'" in err
    assert f"{path}:6: p3 'perhaps' is not yes, no or unsure" in err
    assert f"{path}:7: alice answered" in err and f"already at {path}:2" in err
    assert not (tmp_path / "t.csv").exists()

    code, _, err = _cli(capsys, "label", "import", str(tmp_path / "missing.csv"), "-o",
                        str(tmp_path / "t.csv"), "--cases", str(runs.root))
    assert code == 2 and "missing.csv: no such file" in err


def test_agree_human_against_judge(runs: Runs, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    items = _export(runs, capsys, tmp_path / "form", sample=10)
    assert _cli(capsys, "label", "import", str(_write(tmp_path / "a.csv", _filled(items, "a"))),
                "-o", str(tmp_path / "human.csv"), "--cases", str(runs.root))[0] == 0
    assert _cli(capsys, "label", "judge", str(runs.out), "-o", str(tmp_path / "judge.csv"))[0] \
        == 0
    judge = _rows(tmp_path / "judge.csv")
    _write(tmp_path / "vlm.csv", [r for r in judge if r["annotator"] == "vlm"])
    code, out, err = _cli(capsys, "agree", str(tmp_path / "human.csv"), str(tmp_path / "vlm.csv"),
                          "--on", "model,case_id", "--label", "C5", "--by", "domain", "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["type"] == "ordinal"
    assert result["overall"]["n"] == 10
    assert set(result["groups"]) == {"Kitchen", "Gardening"}
    assert {"weighted_kappa", "spearman", "kendall", "mae"} <= set(result["overall"])
    code, out, err = _cli(capsys, "agree", str(tmp_path / "human.csv"), str(tmp_path / "vlm.csv"),
                          "--on", "model,case_id", "--label", "p2", "--json")
    assert code == 0, err
    # Every answer on both sides is "yes": agreement is perfect but kappa is undefined.
    assert json.loads(out)["overall"] == {"n": 10, "missing": 0, "kappa": None,
                                               "accuracy": 100.0, "macro_precision": 100.0,
                                               "macro_recall": 100.0, "macro_f1": 100.0}


# ---------------------------------------------------------------- a real browser


def _chrome(profile: Path, downloads: Path) -> WebDriver:
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail(f"selenium is not installed: {INSTALL}")
    binary = shutil.which("chromium") or "/usr/bin/chromium"
    driver = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    missing = [p for p in (binary, driver) if not Path(p).is_file()]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: {INSTALL}")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update",
                "--no-first-run", f"--user-data-dir={profile}", "--window-size=1280,1000"):
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    chrome = webdriver.Chrome(options=options, service=Service(driver))
    chrome.execute_cdp_cmd("Page.setDownloadBehavior",
                           {"behavior": "allow", "downloadPath": str(downloads)})
    return chrome


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[tuple[WebDriver, Path]]:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    chrome = _chrome(tmp_path / "profile", downloads)
    try:
        yield chrome, downloads
    finally:
        chrome.quit()


def _answer(browser: WebDriver, item: int, field: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    section = browser.find_element(By.ID, f"item-{item}")
    css = (f'select[data-field="{field}"]' if field.startswith("C")
           else f'input[data-field="{field}"][value="{value}"]')
    element = section.find_element(By.CSS_SELECTOR, css)
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    if field.startswith("C"):
        Select(element).select_by_value(value)
    else:
        element.click()


def _wait_for_file(folder: Path, timeout: float = 10.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [p for p in folder.iterdir() if not p.name.endswith(".crdownload")]
        if done:
            return done[0]
        time.sleep(0.1)
    raise AssertionError(f"no download in {folder}")


@pytest.mark.slow
def test_form_in_a_browser_round_trip(runs: Runs, tmp_path: Path,
                                      browser: tuple[WebDriver, Path],
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from selenium.webdriver.common.by import By

    chrome, downloads = browser
    items = _export(runs, capsys, tmp_path / "form", sample=4)
    form = (tmp_path / "form" / "form.html").resolve().as_uri()
    chrome.get(form)
    assert chrome.find_element(By.ID, "progress").text == "0 of 4 items answered"
    # Without a name the download refuses, in the page (no dialog).
    chrome.find_element(By.ID, "download").click()
    assert "name" in chrome.find_element(By.ID, "status").text
    assert list(downloads.iterdir()) == []

    chrome.find_element(By.ID, "annotator").send_keys("carol")
    dims = ("C0", "C2", "C3", "C4", "C5", "C6", "C7", "C9")
    for field in ("valid_sheet", "p1", "p2", "p3", "p4", "p5", *dims):  # item 1: complete
        value = "no" if field == "valid_sheet" else "unsure" if field == "p3" else \
            "yes" if field.startswith("p") else "6"
        _answer(chrome, 1, field, value)
    _answer(chrome, 2, "valid_sheet", "yes")
    _answer(chrome, 2, "C5", "9")
    _answer(chrome, 2, "p1", "no")
    notes = chrome.find_element(By.CSS_SELECTOR, '#item-2 textarea[data-field="notes"]')
    notes.send_keys('panel 3, "blurry"')
    assert chrome.find_element(By.ID, "progress").text == "1 of 4 items answered"

    chrome.get(form)  # the answers survive a reload: they live in localStorage
    assert chrome.find_element(By.ID, "annotator").get_attribute("value") == "carol"
    assert chrome.find_element(By.ID, "progress").text == "1 of 4 items answered"
    assert chrome.find_element(
        By.CSS_SELECTOR, '#item-2 input[data-field="p1"][value="no"]').is_selected()

    chrome.find_element(By.ID, "download").click()
    csv_file = _wait_for_file(downloads)
    assert csv_file.name == "labels-carol.csv"
    rows = _rows(csv_file)
    assert [r["case_id"] for r in rows] == [r["case_id"] for r in items]
    assert list(rows[0]) == list(items[0])  # the columns of items.csv
    assert rows[0]["valid_sheet"] == "no" and rows[0]["p3"] == "unsure"
    assert rows[0]["C1"] == "n/a" and rows[0]["C5"] == "6"
    assert rows[1]["notes"] == 'panel 3, "blurry"' and rows[1]["C2"] == ""

    code, out, err = _cli(capsys, "label", "import", str(csv_file), "-o",
                          str(tmp_path / "carol.csv"), "--cases", str(runs.root))
    assert code == 0, err
    assert "2 items from carol; skipped 2 unanswered" in out
    assert _cli(capsys, "label", "judge", str(runs.out), "-o", str(tmp_path / "judge.csv"))[0] \
        == 0
    pixel = [r for r in _rows(tmp_path / "judge.csv") if r["annotator"] == "pixel"]
    _write(tmp_path / "pixel.csv", pixel)
    code, out, err = _cli(capsys, "agree", str(tmp_path / "carol.csv"),
                          str(tmp_path / "pixel.csv"), "--on", "model,case_id",
                          "--label", "valid_sheet")
    assert code == 0, err
    assert "labels: categorical" in out
    assert re.search(r"overall\s+2\s+0\s", out)
    assert "8 rows of" in err  # the judge's items nobody labelled


def test_runs_are_found_from_any_level_of_the_output(tmp_path: Path) -> None:
    from pytest_imagetime.research.labels.runs import RunError, run_dirs

    for run in ("procedural/pixel", "procedural/vlm", "other/pixel"):
        (tmp_path / run).mkdir(parents=True)
        (tmp_path / run / "report.json").write_text("{}")
    assert run_dirs([str(tmp_path)]) == [tmp_path / "other/pixel", tmp_path / "procedural/pixel",
                                         tmp_path / "procedural/vlm"]
    assert run_dirs([str(tmp_path / "procedural")]) == [tmp_path / "procedural/pixel",
                                                         tmp_path / "procedural/vlm"]
    assert run_dirs([str(tmp_path / "other/pixel/report.json")]) == [tmp_path / "other/pixel"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunError, match=r"no report\.json under"):
        run_dirs([str(tmp_path / "empty")])
