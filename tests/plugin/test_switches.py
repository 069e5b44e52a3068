"""pytest's own switches beside the plugin: -p no:..., listing sessions, ini files.

A plugin can be disabled; a session that only lists or collects needs no key and no openai
package; a path from the ini file is relative to the ini file's folder; and every switch the
ini file can turn on, the command line can turn off.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_imagetime.backends.registry import JUDGES, MODELS
from pytest_imagetime.plugin.options import Options, option_path, parse_options
from tests.builders import case_dict, write_case_file

SMALL = "--imagetime-size=128"
PIXEL = "--imagetime-judge=pixel"


def _cases(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_case_file(folder / "kitchen.yaml", [
        case_dict("kitchen-pour-water-1"),
        case_dict("kitchen-pour-water-2", variant=2),
    ])


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No judge or image key in these sessions, and none of the caller's addopts."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)


# ------------------------------------------------------------------ -p no:...

OWN_TEST = """
def test_own():
    assert 1 + 1 == 2
"""

BENCHMARK_INI = """
[pytest]
imagetime_model = procedural
imagetime_judge = pixel
imagetime_size = 128
filterwarnings = ignore::pytest.PytestConfigWarning
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_disabling_the_plugin_runs_the_projects_own_tests(pytester: pytest.Pytester,
                                                           workers: list[str]) -> None:
    pytester.makeini(BENCHMARK_INI)
    pytester.makepyfile(test_own=OWN_TEST)
    result = pytester.runpytest("-p", "no:imagetime", "test_own.py", *workers)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)


def test_disabling_the_plugin_refuses_the_tempviz_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_own=OWN_TEST)
    result = pytester.runpytest("-p", "no:imagetime", "--imagetime-tempviz-data=tables")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--imagetime-tempviz-data: the TempViz suite runs through "
                                 "the imagetime plugin, which -p no:imagetime disabled*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_disabling_tempviz_leaves_the_benchmark_running(pytester: pytest.Pytester,
                                                        workers: list[str]) -> None:
    _cases(pytester.path)
    result = pytester.runpytest("-p", "no:imagetime-tempviz", "kitchen.yaml",
                                "--imagetime-model=procedural", PIXEL, SMALL, *workers)
    result.assert_outcomes(passed=2)
    assert (pytester.path / "reports" / "procedural" / "pixel" / "report.json").is_file()


def test_disabling_tempviz_refuses_its_suite(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:imagetime-tempviz", "--imagetime-model=procedural",
                                "--imagetime-suite=tempviz")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--imagetime-suite=tempviz: the TempViz plugin is disabled "
                                 "(-p no:imagetime-tempviz)*"])


# ------------------------------------------------------------------ listing sessions

# Loaded first by every Python process of the session: the openai package cannot be imported.
WITHOUT_OPENAI = """
import importlib.abc, sys

class _NoOpenAI(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "openai" or name.startswith("openai."):
            raise ModuleNotFoundError("No module named 'openai'", name=name)
        return None

sys.meta_path.insert(0, _NoOpenAI())
"""

# Both hosted backends: each would need the openai package and a key to make calls.
HOSTED_INI = """
[pytest]
imagetime_model = openai-images
imagetime_judge = vlm
"""


@pytest.fixture
def without_openai(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    site = pytester.mkdir("site")
    (site / "sitecustomize.py").write_text(WITHOUT_OPENAI, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    pytester.makeini(HOSTED_INI)
    _cases(pytester.path / "cases")


LISTINGS = {
    "collect-only": (["cases", "--collect-only", "-q"], pytest.ExitCode.OK,
                     ["*kitchen.yaml::kitchen-pour-water-1?openai-images?", "2 tests collected*"]),
    "collect-only-xdist": (["cases", "--collect-only", "-q", "-n", "2"], pytest.ExitCode.OK,
                           ["*2 tests collected*"]),
    "markers": (["--markers"], pytest.ExitCode.OK,
                ["@pytest.mark.imagetime: an ImageTime benchmark item",
                 "@pytest.mark.imagetime_L6: *", "@pytest.mark.tempviz: a TempViz item"]),
    "help": (["--help"], pytest.ExitCode.OK,
             ["*--imagetime-judge=*", "*--imagetime-no-dry-run*"]),
    "fixtures": (["cases", "--fixtures"], pytest.ExitCode.OK, ["*tmp_path*"]),
    "dry-run": (["cases", "--imagetime-dry-run", "--imagetime-judge-price=1,2"],
                pytest.ExitCode.OK,
                ["*ImageTime dry run*", "openai-images | vlm * 2 * 2 *",
                 "total: $*nothing was generated or judged"]),
}


@pytest.mark.usefixtures("without_openai")
@pytest.mark.parametrize("listing", list(LISTINGS))
def test_listing_sessions_need_no_key_and_no_openai(pytester: pytest.Pytester,
                                                    listing: str) -> None:
    args, code, lines = LISTINGS[listing]
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == code, result.stdout.str() + result.stderr.str()
    for line in lines:  # each on its own: the plugins' markers come in either order
        result.stdout.fnmatch_lines([line])
    assert not (pytester.path / "reports").exists()


@pytest.mark.usefixtures("without_openai")
def test_a_run_without_openai_names_the_offline_judge(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "cases",
                                           "--imagetime-model=procedural")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "*--imagetime-judge=vlm: the vlm judge needs the openai package: pip install "
        "'pytest-imagetime?openai?'; to score offline use --imagetime-judge=pixel*"])


def test_collect_only_leaves_the_reports_of_a_run_alone(pytester: pytest.Pytester) -> None:
    _cases(pytester.path)
    args = ("kitchen.yaml", "--imagetime-model=procedural", PIXEL, SMALL)
    pytester.runpytest(*args).assert_outcomes(passed=2)
    report = pytester.path / "reports" / "procedural" / "pixel" / "report.json"
    before = report.read_bytes()
    canaries = pytester.runpytest(*args, "--collect-only", "--imagetime-canaries",
                                  "--imagetime-judge=vlm")
    assert canaries.ret == pytest.ExitCode.OK
    assert report.read_bytes() == before


# ------------------------------------------------------------------ ini paths

PATH_INI = """
[pytest]
imagetime_out = bench-out
imagetime_html = bench-html
imagetime_baseline = baseline
imagetime_judge_prices = prices.json
imagetime_reference_dir = refs
imagetime_tempviz_data = tables
imagetime_tempviz_examples = shots.jsonl
"""


def _options_from(pytester: pytest.Pytester, *args: str) -> tuple[Options, pytest.Config]:
    config = pytester.parseconfigure(*args)
    return parse_options(config), config


def test_ini_paths_are_relative_to_the_ini_file(pytester: pytest.Pytester,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    root = pytester.path
    pytester.makeini(PATH_INI)
    (root / "refs").mkdir()
    sub = pytester.mkdir("deep")
    monkeypatch.chdir(sub)
    options, config = _options_from(pytester)
    assert config.inipath == root / "tox.ini"
    assert options.out == root / "bench-out"
    assert options.junit == root / "bench-out" / "junit.xml"
    assert options.html == root / "bench-html"
    assert options.baseline == root / "baseline"
    assert options.judge_options.prices_file == root / "prices.json"
    assert options.reference_dir == root / "refs"
    assert option_path(config, "tempviz-data") == root / "tables"
    assert option_path(config, "tempviz-examples") == root / "shots.jsonl"


def test_command_line_paths_are_relative_to_the_working_directory(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini(PATH_INI)
    pytester.mkdir("refs")
    sub = pytester.mkdir("deep")
    monkeypatch.chdir(sub)
    options, config = _options_from(pytester, "--imagetime-out=here",
                                    "--imagetime-junit=j.xml", "--imagetime-tempviz-data=t")
    assert options.out == sub / "here"
    assert options.junit == sub / "j.xml"
    assert option_path(config, "tempviz-data") == sub / "t"
    assert options.html == pytester.path / "bench-html"  # still the ini file's


def test_an_ini_file_given_with_c_anchors_its_own_paths(pytester: pytest.Pytester) -> None:
    ci = pytester.mkdir("ci")
    (ci / "bench.ini").write_text("[pytest]\nimagetime_out = out\n", encoding="utf-8")
    options, _ = _options_from(pytester, "-c", "ci/bench.ini")
    assert options.out == ci / "out"
    options, _ = _options_from(pytester, "-o", "imagetime_out=elsewhere")
    assert options.out == pytester.path / "elsewhere"  # no ini file: the working directory


def test_paths_in_specs_from_the_ini_file_are_relative_to_it(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    root = pytester.path
    pytester.makeini("[pytest]\nimagetime_model = files:sheets\n"
                     "imagetime_judge = replay:runs/procedural/pixel\n")
    (root / "sheets").mkdir()
    (root / "runs" / "procedural" / "pixel" / "judgments").mkdir(parents=True)
    sub = pytester.mkdir("deep")
    monkeypatch.chdir(sub)
    options, _ = _options_from(pytester)
    model = MODELS.create(options.models[0], options=options.model_options)
    judge = JUDGES.create(options.judge, options=options.judge_options)
    assert model.directory == root / "sheets"
    assert model.name == "files:sheets"  # the run directory keeps the name as written
    assert judge.source == (root / "runs" / "procedural" / "pixel").resolve()
    # From the command line: the working directory, as before.
    (sub / "mine").mkdir()
    options, _ = _options_from(pytester, "--imagetime-model=files:mine")
    assert MODELS.create(options.models[0], options=options.model_options).directory \
        == sub / "mine"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_run_from_a_subfolder_writes_where_the_ini_file_says(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]) -> None:
    root = pytester.path
    pytester.makeini("[pytest]\nimagetime_model = procedural\nimagetime_judge = pixel\n"
                     "imagetime_out = bench-out\nimagetime_size = 128\n")
    _cases(root / "cases")
    sub = pytester.mkdir("deep")
    monkeypatch.chdir(sub)
    pytester.runpytest(str(root / "cases"), *workers).assert_outcomes(passed=2)
    report = root / "bench-out" / "procedural" / "pixel" / "report.json"
    assert json.loads(report.read_text(encoding="utf-8"))["aggregate"]["n"] == 2
    assert not (sub / "bench-out").exists()


# ------------------------------------------------------------------ switches turned off

SWITCHES = ("regenerate", "rejudge", "dry-run", "update-baseline", "gate-significant",
            "allow-judge-change", "canaries")


@pytest.mark.parametrize("switch", SWITCHES)
@pytest.mark.parametrize(("ini", "command_line", "expected"), [
    (None, None, False), ("true", None, True), ("false", None, False),
    (None, "on", True), ("false", "on", True), ("true", "on", True),
    (None, "off", False), ("true", "off", False), ("false", "off", False),
])
def test_the_command_line_turns_any_switch_on_or_off(
        pytester: pytest.Pytester, switch: str, ini: str | None, command_line: str | None,
        expected: bool) -> None:
    key = "imagetime_" + switch.replace("-", "_")
    pytester.makeini(f"[pytest]\n{key} = {ini}\n" if ini else "[pytest]\n")
    args = {None: [], "on": [f"--imagetime-{switch}"],
            "off": [f"--imagetime-no-{switch}"]}[command_line]
    options = parse_options(pytester.parseconfigure(*args))
    assert getattr(options, switch.replace("-", "_")) is expected


def test_the_last_of_on_and_off_wins(pytester: pytest.Pytester) -> None:
    options = parse_options(pytester.parseconfigure("--imagetime-no-rejudge",
                                                    "--imagetime-rejudge"))
    assert options.rejudge is True
    options = parse_options(pytester.parseconfigure("--imagetime-rejudge",
                                                    "--imagetime-no-rejudge"))
    assert options.rejudge is False


def test_a_dry_run_set_in_the_ini_file_is_turned_off_for_one_run(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nimagetime_dry_run = true\n")
    _cases(pytester.path)
    args = ("kitchen.yaml", "--imagetime-model=procedural", PIXEL, SMALL)
    dry = pytester.runpytest(*args)
    dry.stdout.fnmatch_lines(["*ImageTime dry run*"])
    assert not (pytester.path / "reports").exists()
    pytester.runpytest(*args, "--imagetime-no-dry-run").assert_outcomes(passed=2)
