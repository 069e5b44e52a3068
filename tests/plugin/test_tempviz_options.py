"""``plugin/tempviz_options.py``: the TempViz suite's options on the command line and in the
ini file."""

from __future__ import annotations

import pytest

from pytest_imagetime.plugin.tempviz_options import TEMPVIZ_OPTIONS
from pytest_imagetime.tempviz.names import CATEGORIES, STYLES


def test_each_option_has_a_flag_and_an_ini_name(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--imagetime-tempviz-data=tables",
                                  "--imagetime-tempviz-style=instructed")
    assert config.getoption("imagetime_tempviz_data") == "tables"
    assert config.getoption("imagetime_tempviz_style") == "instructed"
    assert config.getoption("imagetime_tempviz_examples") is None
    for name in TEMPVIZ_OPTIONS:
        assert config.getini("imagetime_" + name.replace("-", "_")) is None


def test_the_ini_file_sets_them(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nimagetime_tempviz_examples = shots.csv\n")
    config = pytester.parseconfig()
    assert config.getini("imagetime_tempviz_examples") == "shots.csv"


def test_the_help_names_the_tables_and_styles(pytester: pytest.Pytester) -> None:
    help_text = " ".join(pytester.runpytest("--help").stdout.str().split())
    for name in TEMPVIZ_OPTIONS:
        assert f"--imagetime-{name}=" in help_text
        assert f"imagetime_{name.replace('-', '_')} (string):" in help_text
    assert all(f"{c}.csv" in help_text for c in CATEGORIES)
    assert f"{' or '.join(STYLES)} (default: simple" in help_text

