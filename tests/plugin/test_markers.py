"""Item markers: unknown names are registered once, every item of a name shares one marker."""

from __future__ import annotations

import pytest

from pytest_imagetime.plugin.markers import Markers


def _describe(name: str) -> str:
    return f"items of {name}"


def _marker_lines(config: pytest.Config) -> list[str]:
    return [str(line) for line in config.getini("markers")]


def test_a_new_name_is_registered_and_marks_the_item(pytester: pytest.Pytester) -> None:
    item = pytester.getitem("def test_func(): pass")
    markers = Markers(item.config)
    markers.add(item, ["kitchen"], _describe)
    assert "kitchen: items of kitchen" in _marker_lines(item.config)
    marker = item.get_closest_marker("kitchen")
    assert marker is not None and marker.name == "kitchen"


def test_a_known_name_is_not_registered_again(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    slow: takes long\n")
    item = pytester.getitem("def test_func(): pass")
    markers = Markers(item.config)
    assert "slow" in markers.known
    before = _marker_lines(item.config)
    markers.add(item, ["slow"], _describe)
    assert _marker_lines(item.config) == before
    assert item.get_closest_marker("slow") is not None


def test_items_of_one_name_share_one_marker_and_one_line(pytester: pytest.Pytester) -> None:
    items = pytester.getitems("def test_a(): pass\ndef test_b(): pass\n")
    markers = Markers(items[0].config)
    described: list[str] = []

    def describe(name: str) -> str:
        described.append(name)
        return name

    for item in items:
        markers.add(item, ["sports", "sports"], describe)
    assert described == ["sports"]
    assert [line for line in _marker_lines(items[0].config)
            if line.startswith("sports:")] == ["sports: sports"]
    first, second = ([m for m in item.own_markers if m.name == "sports"] for item in items)
    assert first[0] is second[0]


def test_marked_items_pass_under_strict_markers(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        from pytest_imagetime.plugin.markers import Markers

        def pytest_collection_modifyitems(config, items):
            markers = Markers(config)
            for item in items:
                markers.add(item, ["brandnew"], lambda name: "a category of the data")
    """)
    pytester.makepyfile("def test_one(): pass")
    result = pytester.runpytest("--strict-markers", "-m", "brandnew")
    result.assert_outcomes(passed=1)
