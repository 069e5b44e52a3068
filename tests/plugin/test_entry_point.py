"""The pytest entry points of both suites: nothing collected without a model, options checked
even when unused, markers listed, and a disabled plugin named in the refusal."""

from __future__ import annotations

import pytest

import pytest_imagetime.plugin
import pytest_imagetime.plugin.tempviz
from pytest_imagetime.plugin import hookspec


def test_the_entry_points_are_the_installed_plugins(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    manager = config.pluginmanager
    assert manager.get_plugin("imagetime") is pytest_imagetime.plugin
    assert manager.get_plugin("imagetime-tempviz") is pytest_imagetime.plugin.tempviz
    assert manager.hook.pytest_imagetime_item_conditions.spec is not None
    assert manager.hook.pytest_imagetime_update_report.spec is not None
    assert hookspec.pytest_imagetime_update_report.__doc__


def test_without_a_model_a_repositorys_tests_run_as_usual(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_one(): pass")
    pytester.makeconftest("""
        import sys

        def pytest_sessionfinish(session):
            loaded = [m for m in ("pytest_imagetime.plugin.start", "numpy") if m in sys.modules]
            print("LOADED=" + ",".join(loaded))
    """)
    result = pytester.runpytest_subprocess("-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["collected 1 item", "*LOADED="])  # neither the session nor numpy


def test_a_bad_option_is_refused_even_without_a_model(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_one(): pass")
    result = pytester.runpytest_subprocess("--imagetime-suite=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--imagetime-suite*nope*use one of imagetime, tempviz*"])


def test_markers_lists_the_benchmarks_markers(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")
    assert result.ret == 0
    out = result.stdout.str()
    assert "@pytest.mark.imagetime: an ImageTime benchmark item" in out
    assert "@pytest.mark.imagetime_L0: ImageTime items probing capability level L0" in out
    assert "@pytest.mark.imagetime_domain_kitchen: ImageTime items of domain Kitchen" in out


def test_help_is_shown_whatever_the_options_hold(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help", "--imagetime-suite=nope")
    assert result.ret == 0
    assert "--imagetime-tempviz-data" in result.stdout.str()


def test_tempviz_without_its_plugin_says_which_plugin_is_off(
        pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:imagetime-tempviz",
                                           "--imagetime-suite=tempviz")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the TempViz plugin is disabled (-p no:imagetime-tempviz)*"])


def test_tempviz_options_without_the_imagetime_plugin_are_refused(
        pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:imagetime",
                                           "--imagetime-tempviz-data=somewhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--imagetime-tempviz-data: the TempViz suite runs through "
                                 "the imagetime plugin, which -p no:imagetime disabled*"])
