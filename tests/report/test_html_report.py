"""The HTML report over real run directories: its files and links, then a real browser."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import escape
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import pytest
from PIL import Image

from pytest_imagetime.cases.loading import load_case_file
from pytest_imagetime.models.base import GenerationRequest
from pytest_imagetime.models.procedural import ProceduralModel
from pytest_imagetime.report.html import THUMB_PX, case_url, run_pages, write_html
from tests.builders import case_dict, write_case_file
from tests.fake_openai import ServerState, chat_server

if TYPE_CHECKING:
    from selenium.webdriver.chrome.webdriver import WebDriver

SMALL = "--imagetime-size=128"
HOSTILE = "<script>alert(1)</script>"
KITCHEN = "Kitchen & <b>Bar</b>"
JUDGE_MODEL = "judge<i>&amp;"
INSTALL = ("the browser tests need Debian's chromium and chromedriver, and selenium: "
           "apt-get update && apt-get install -y chromium chromium-driver && "
           "python3 -m pip install selenium")


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """These runs use the offline pixel judge unless a test names another (after pytester,
    which clears PYTEST_ADDOPTS)."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")


# ---------------------------------------------------------------- run directories


def _hostile_case() -> dict[str, Any]:
    case = case_dict("kitchen-pour-water-2", variant=2, concept=f"pour water & tea {HOSTILE}")
    case["predicates"][0]["text"] = f"the glass & jug are empty {HOSTILE}"
    case["forbidden"][0] = f"water in the glass at t1 & {HOSTILE}"
    case["prompt"] += f" {HOSTILE}"
    return case


def _case_files(root: Path) -> list[str]:
    write_case_file(root / "kitchen.yaml", [case_dict("kitchen-pour-water-1"), _hostile_case()],
                    domain=KITCHEN)
    write_case_file(root / "garden.yaml", [case_dict(
        "gardening-water-plant-1", concept="water a plant", difficulty="hard",
        levels=["L0", "L1", "L2"])], domain="Gardening")
    return ["kitchen.yaml", "garden.yaml"]


@dataclass
class Site:
    root: Path
    out: Path
    run_dirs: list[Path]
    pages: dict[str, Path] = field(default_factory=dict)  # "<model dir>/<judge>" -> page

    def report(self, run: str) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads((self.root / "reports" / run / "report.json")
                                            .read_text())
        return loaded


def _sheet_for_files_model(root: Path) -> None:
    """One good sheet in sheets/ for the files model; its other cases have none (errors)."""
    case = load_case_file(root / "kitchen.yaml")[0]
    request = GenerationRequest(case=case, setting="prompt-only", size=128, seed=1)
    (root / "sheets").mkdir()
    ProceduralModel().generate(request=request).image.save(root / "sheets" / f"{case.id}.png")


def _runs(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four runs: passing, failing, erroring (a model with missing sheets), and a vlm judge."""
    files = _case_files(pytester.path)
    _sheet_for_files_model(pytester.path)
    pytester.runpytest(*files, "--imagetime-model=procedural",
                       "--imagetime-model=procedural:copied", "--imagetime-model=files:sheets",
                       SMALL).assert_outcomes(passed=4, failed=3, errors=2)
    with chat_server(ServerState()) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        pytester.runpytest(*files, "--imagetime-model=procedural", "--imagetime-judge=vlm",
                           f"--imagetime-judge-model={JUDGE_MODEL}", SMALL).assert_outcomes(
                               passed=3)
    write_html(sorted(p.parent for p in (pytester.path / "reports").rglob("report.json")),
               pytester.path / "site")


@pytest.fixture(scope="module")
def built() -> dict[str, Path]:
    """Where this module's first test left its runs and site, for the others to copy."""
    return {}


@pytest.fixture
def site(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
         tmp_path_factory: pytest.TempPathFactory, built: dict[str, Path]) -> Site:
    """The runs and their site in this test's directory, built once per module."""
    if "root" not in built:
        _runs(pytester, monkeypatch)
        built["root"] = tmp_path_factory.mktemp("html-runs") / "copy"
        shutil.copytree(pytester.path, built["root"], symlinks=True)
    else:
        shutil.copytree(built["root"], pytester.path, symlinks=True, dirs_exist_ok=True)
    run_dirs = sorted(p.parent for p in (pytester.path / "reports").rglob("report.json"))
    names = [f"{d.parent.name}/{d.name}" for d in run_dirs]
    assert sorted(names) == ["files-sheets/pixel", "procedural-copied/pixel",
                             "procedural/pixel", "procedural/vlm"]
    out = pytester.path / "site"
    pages = {n: out / p for n, p in zip(names, run_pages(run_dirs), strict=True)}
    return Site(pytester.path, out, run_dirs, pages)


# ---------------------------------------------------------------- the folder, parsed


class Page(HTMLParser):
    """What a page refers to and holds: image sources, links, ids, scripts and its text."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.raw = path.read_text(encoding="utf-8")
        self.srcs: list[str] = []
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.scripts = 0
        self.text: list[str] = []
        self.feed(self.raw)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "img":
            self.srcs.append(values["src"])
        if tag == "a" and "href" in values:
            self.hrefs.append(values["href"])
        if "id" in values:
            self.ids.add(values["id"])
        self.scripts += tag == "script"

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _target(page: Page, reference: str) -> tuple[Path, str]:
    parts = urlsplit(reference)
    assert not parts.scheme and not parts.netloc, f"{page.path.name}: not local: {reference}"
    path = page.path.parent / unquote(parts.path) if parts.path else page.path
    return path, unquote(parts.fragment)


def _check_references(pages: dict[Path, Page]) -> None:
    for page in pages.values():
        for src in page.srcs:
            assert not src.startswith("data:"), f"{page.path.name}: a data URL"
            assert _target(page, src)[0].is_file(), f"{page.path.name}: missing {src}"
        for href in page.hrefs:
            path, fragment = _target(page, href)
            assert path.is_file(), f"{page.path.name}: broken link {href}"
            if fragment:
                assert fragment in pages[path].ids, f"{page.path.name}: no anchor {href}"


def test_every_reference_resolves_and_the_folder_stands_alone(site: Site) -> None:
    pages = {p: Page(p) for p in sorted(site.out.glob("*.html"))}
    assert set(pages) == {site.out / "index.html", *site.pages.values()}
    _check_references(pages)
    for name, path in site.pages.items():
        for item in site.report(name)["items"]:
            page, fragment = case_url(path.name, item["case_id"]).split("#")
            assert page == path.name and fragment in pages[path].ids
    # Hard links and copies survive the run directories.
    shutil.rmtree(site.root / "reports")
    _check_references(pages)
    assert all(p.stat().st_size < 200_000 and "base64" not in p.read_text()
               for p in pages)


def test_pages_show_scores_verdicts_and_errors(site: Site) -> None:
    index = Page(site.out / "index.html")
    rows = [line for line in index.raw.splitlines() if line.startswith("<tr><td>")]
    overall = [float(row.split("<b>")[1].split("</b>")[0]) for row in rows]
    assert len(rows) == 4 and overall == sorted(overall, reverse=True)  # best first
    assert escape(JUDGE_MODEL) in index.raw and "unknown" in index.raw  # no price known
    vlm = Page(site.pages["procedural/vlm"])
    text = " ".join(vlm.text)
    assert f"the glass & jug are empty {HOSTILE}" in text  # predicate text from the case file
    assert "holds" in text and "visible" in text and "absent" in text  # verdicts, evidence
    copied = " ".join(Page(site.pages["procedural-copied/pixel"]).text)
    assert "copied_phases" in copied and "copied-phases" in copied  # labels, caps
    assert "not checked by this judge" in copied
    files = Page(site.pages["files-sheets/pixel"])
    errors = [e["reason"] for e in site.report("files-sheets/pixel")["errors"]]
    assert len(errors) == 2 and all(escape(e) in files.raw for e in errors)
    assert "no sheet" in " ".join(files.text)


def test_texts_are_escaped_and_only_our_script_runs(site: Site) -> None:
    for path in site.pages.values():
        page = Page(path)
        assert HOSTILE not in page.raw and "<b>Bar</b>" not in page.raw
        assert escape(HOSTILE) in page.raw and "pour water &amp; tea" in page.raw
        assert page.scripts == 1
    index = Page(site.out / "index.html")
    assert index.scripts == 0 and escape(KITCHEN) in index.raw


def test_thumbnails_are_small_and_a_rebuild_changes_nothing(site: Site) -> None:
    thumbs = sorted(site.out.glob("media/*/*.thumb.jpg"))
    assert len(thumbs) == 7  # 3 procedural + 3 copied + 1 file sheet; the vlm run shares
    for thumb in thumbs:
        with Image.open(thumb) as image:
            assert max(image.size) <= THUMB_PX
    full = site.out / "media" / "procedural" / "kitchen-pour-water-1.png"
    source = site.root / "reports" / "procedural" / "images" / "kitchen-pour-water-1.png"
    assert full.read_bytes() == source.read_bytes()
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in site.out.rglob("*.*")}
    write_html(site.run_dirs, site.out)
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in site.out.rglob("*.*")}
    assert {p: v for p, v in after.items() if p.suffix != ".html"} == {
        p: v for p, v in before.items() if p.suffix != ".html"}
    assert all(after[p][0] == before[p][0] for p in before)


def test_a_sheet_regenerated_after_judging_is_flagged(site: Site,
                                                     pytester: pytest.Pytester) -> None:
    """The vlm run shares procedural's images; a later pixel run at another size remakes them."""
    pytester.runpytest(*_case_files(site.root), "--imagetime-model=procedural",
                       "--imagetime-size=96").assert_outcomes(passed=3)
    write_html(site.run_dirs, site.out)
    note = "A later run regenerated this sheet"
    assert Page(site.pages["procedural/vlm"]).raw.count(note) == 3
    assert note not in Page(site.pages["procedural/pixel"]).raw


def test_case_urls_and_page_names() -> None:
    assert case_url("run-procedural--pixel.html", "kitchen-pour-water-1") == (
        "run-procedural--pixel.html#case-kitchen-pour-water-1")
    assert run_pages([Path("a/procedural/pixel"), Path("b/procedural/pixel"),
                      Path("a/files:x/vlm")]) == [
        "run-procedural--pixel.html", "run-procedural--pixel-2.html", "run-files-x--vlm.html"]


def test_a_directory_without_report_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no readable report\.json"):
        write_html([tmp_path], tmp_path / "site")
    with pytest.raises(ValueError, match="no run directories"):
        write_html([], tmp_path / "site")


# ---------------------------------------------------------------- a real browser

# Records every dialog a page tries to open, before any of its own scripts run.
WATCH_DIALOGS = ("window.__dialogs = [];"
                 "for (const f of ['alert', 'confirm', 'prompt']) {"
                 "  const original = window[f];"
                 "  window[f] = (...a) => { window.__dialogs.push(String(a[0])); "
                 "return original.apply(window, a); };"
                 "}")


def _chrome(profile: Path) -> WebDriver:
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
    options.unhandled_prompt_behavior = "ignore"  # an alert stays open, so we can see it
    chrome = webdriver.Chrome(options=options, service=Service(driver))
    chrome.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH_DIALOGS})
    return chrome


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    chrome = _chrome(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield chrome
    finally:
        chrome.quit()


def _open(browser: WebDriver, path: Path, fragment: str = "") -> None:
    browser.get(path.resolve().as_uri() + fragment)
    _assert_no_dialog(browser)


def _assert_no_dialog(browser: WebDriver) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    opened: list[str] = []
    while len(opened) < 20:  # dismiss them all, so that later tests start clean
        try:
            alert = browser.switch_to.alert
        except NoAlertPresentException:
            break
        opened.append(alert.text)
        alert.dismiss()
    assert not opened, f"the page opened dialogs: {opened}"
    assert browser.execute_script("return window.__dialogs") == []


def _visible(browser: WebDriver) -> list[str]:
    found: list[str] = browser.execute_script(
        "return Array.from(document.querySelectorAll('.card'))"
        ".filter((c) => c.offsetParent !== null).map((c) => c.dataset.case)")
    return found


def _choose(browser: WebDriver, css: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.CSS_SELECTOR, css)).select_by_value(value)


def test_browser_renders_pages_and_loads_every_image(site: Site, browser: WebDriver) -> None:
    for path in [site.out / "index.html", *site.pages.values()]:
        _open(browser, path)
        assert browser.title.startswith("ImageTime")
        # Lazy images below the fold would never load headless: load them all now.
        browser.execute_script("document.querySelectorAll('img').forEach("
                               "(i) => { i.loading = 'eager'; })")
        sizes: list[int] = browser.execute_async_script(
            "const done = arguments[0];"
            "const images = Array.from(document.images);"
            "Promise.all(images.map((i) => i.decode().catch(() => null)))"
            ".then(() => done(images.map((i) => i.naturalWidth)));")
        assert all(width > 0 for width in sizes), f"{path.name}: an image did not load"
    assert len(sizes) == 3 * 5  # the last page: a thumbnail and four panels per case


def test_browser_filters_and_sorts_cards(site: Site, browser: WebDriver) -> None:
    _open(browser, site.pages["files-sheets/pixel"])
    every = ["gardening-water-plant-1", "kitchen-pour-water-1", "kitchen-pour-water-2"]
    assert _visible(browser) == every
    _choose(browser, "select[data-filter=outcome]", "error")
    assert _visible(browser) == ["gardening-water-plant-1", "kitchen-pour-water-2"]
    _choose(browser, "select[data-filter=domain]", KITCHEN)
    assert _visible(browser) == ["kitchen-pour-water-2"]
    _choose(browser, "select[data-filter=outcome]", "")
    assert _visible(browser) == ["kitchen-pour-water-1", "kitchen-pour-water-2"]
    _choose(browser, "select[data-filter=domain]", "")
    _choose(browser, "select[data-filter=levels]", "L2")
    assert _visible(browser) == ["gardening-water-plant-1"]
    _choose(browser, "select[data-filter=levels]", "")
    _choose(browser, "select[data-filter=difficulty]", "easy")
    assert browser.find_element("id", "shown").text == "2 of 3 cases shown"
    _choose(browser, "select[data-filter=difficulty]", "")
    _choose(browser, "#sort", "overall-desc")  # the passed case first, errors last
    assert _visible(browser) == ["kitchen-pour-water-1", "gardening-water-plant-1",
                                 "kitchen-pour-water-2"]
    _choose(browser, "#sort", "case")
    assert _visible(browser) == every
    _assert_no_dialog(browser)


def test_browser_shows_hostile_text_as_text(site: Site, browser: WebDriver) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, site.pages["procedural/vlm"], "#case-kitchen-pour-water-2")
    card = browser.find_element(By.CSS_SELECTOR, ":target")
    assert card.get_attribute("id") == "case-kitchen-pour-water-2"
    assert f"pour water & tea {HOSTILE}" in card.text
    assert f"the glass & jug are empty {HOSTILE}" in card.text
    assert browser.execute_script("return document.scripts.length") == 1
    _open(browser, site.out / "index.html")
    assert KITCHEN in browser.find_element(By.ID, "domains").text
    assert JUDGE_MODEL in browser.find_element(By.ID, "leaderboard").text
