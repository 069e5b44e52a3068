"""`imagetime report`: the HTML folder and the figures from stored runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_imagetime.cli import main
from tests.builders import case_dict, write_case_file


def test_report_writes_html_and_figures(pytester: pytest.Pytester,
                                        monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")
    write_case_file(pytester.path / "k.yaml", [case_dict(), case_dict("kitchen-pour-water-2",
                                                                      variant=2)])
    pytester.runpytest("k.yaml", "--imagetime-model=procedural",
                       "--imagetime-model=procedural:copied", "--imagetime-size=128")
    assert main(["report", "reports", "-o", "site"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "html: " in out and "figures: 12 files" in out and "shown on index.html" in out
    # Progress while the thumbnails are made: the last line names every sheet.
    assert "imagetime report: sheets 4/4" in captured.err
    assert "no judge cost in these runs" in out
    assert "no reported generation cost in these runs" in out
    index = (pytester.path / "site" / "index.html").read_text()
    assert "procedural:copied" in index
    # The figures are on the page, each linking to its PNG; run pages link to them.
    assert '<h2 id="figures">Figures</h2>' in index
    assert '<a href="figures/c_radar.png"><img src="figures/c_radar.svg"' in index
    assert "cost_vs_overall" not in index
    run_page = next(p for p in (pytester.path / "site").glob("*.html") if p.name != "index.html")
    assert 'href="index.html#figures"' in run_page.read_text()
    assert sorted(p.suffix for p in Path(pytester.path / "site" / "figures").iterdir()) == \
        [".png"] * 6 + [".svg"] * 6
    assert main(["report", "nowhere", "-o", "site"]) == 2
    # At a GPU-hour price the local runs' drawing seconds put them on the cost figure.
    assert main(["report", "reports", "-o", "priced", "--gpu-usd-per-hour", "2.5"]) == 0
    out = capsys.readouterr().out
    assert "figures: 14 files" in out and "2 runs priced by GPU time at 2.5 USD/h" in out
    assert '<img src="figures/cost_vs_overall.svg"' in \
        (pytester.path / "priced" / "index.html").read_text()


@pytest.mark.parametrize("price", ["0", "-1", "free", "inf", "nan"])
def test_a_gpu_price_that_is_not_a_price_is_refused(price: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["report", "reports", "--gpu-usd-per-hour", price])
    assert info.value.code == 2
    assert "--gpu-usd-per-hour: " in capsys.readouterr().err


def test_run_writes_html_and_junit_links_to_case_pages(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import xml.etree.ElementTree as ET

    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")
    write_case_file(pytester.path / "k.yaml", [case_dict()])
    result = pytester.runpytest("k.yaml", "--imagetime-model=procedural:copied",
                                "--imagetime-size=128", "--imagetime-html=site")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["html: *site/index.html"])
    junit = ET.parse(pytester.path / "reports" / "junit.xml").getroot()
    (failure,) = junit.iter("failure")
    link = (failure.text or "").splitlines()[-1]
    assert link.startswith("case page: ") and link.endswith("#case-kitchen-pour-water-1")
    page = Path(link.removeprefix("case page: ").split("#")[0])
    assert page.is_file() and 'id="case-kitchen-pour-water-1"' in page.read_text()
