"""``plugin/rerun.py``: the rerun command's words and node ids relative to the working
directory."""

from __future__ import annotations

import shlex

import pytest

from pytest_imagetime.plugin.rerun import RERUN_OPTIONS, cwd_relative, rerun_command


def test_the_command_keeps_the_selection_the_models_and_the_given_options(
        pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--imagetime-judge=pixel", "--imagetime-seed=7",
                                  "--imagetime-size=128")
    command = rerun_command(config, ["cases.yaml::a[procedural]"], ["procedural", "files:x"])
    assert shlex.split(command) == [
        "pytest", "cases.yaml::a[procedural]", "--imagetime-model=procedural",
        "--imagetime-model=files:x", "--imagetime-judge=pixel", "--imagetime-size=128",
        "--imagetime-seed=7"]


def test_options_outside_the_rerun_list_are_left_out(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--imagetime-limit=3")
    assert "limit" not in RERUN_OPTIONS
    assert rerun_command(config, ["--lf"], ["procedural"]) == \
        "pytest --lf --imagetime-model=procedural"


def test_an_ini_value_is_carried_like_a_command_line_one(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nimagetime_judge = pixel\n")
    config = pytester.parseconfig()
    assert rerun_command(config, [], []) == "pytest --imagetime-judge=pixel"


def test_words_with_spaces_are_quoted(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    command = rerun_command(config, ["cases.yaml::a[my model]"], ["files:a folder"])
    assert shlex.split(command) == ["pytest", "cases.yaml::a[my model]",
                                    "--imagetime-model=files:a folder"]


def test_a_node_id_from_the_rootdir_is_unchanged(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig()
    assert cwd_relative(config, "cases/a.yaml::a[m]") == "cases/a.yaml::a[m]"


def test_a_node_id_is_made_relative_to_a_subfolder(pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\n")
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)
    config = pytester.parseconfig()
    assert config.rootpath == pytester.path
    assert cwd_relative(config, "cases/a.yaml::a[m]") == "../cases/a.yaml::a[m]"
    assert cwd_relative(config, "sub/a.yaml::a[m]") == "a.yaml::a[m]"
    assert cwd_relative(config, "") == ""
