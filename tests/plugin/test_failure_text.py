"""Plain failures: a listed exception reads as its message, anything else as pytest shows it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_imagetime.plugin.failure_text import report_text


def test_a_report_without_a_failure_has_no_text() -> None:
    assert report_text(SimpleNamespace(longrepr=None)) == ""


def test_a_plain_longrepr_is_its_text_stripped() -> None:
    assert report_text(SimpleNamespace(longrepr="  bad case file\n")) == "bad case file"
    assert report_text(SimpleNamespace(longrepr=("f.py", 3, "skipped"))) == str(
        ("f.py", 3, "skipped"))


def test_a_terminal_repr_is_written_without_markup() -> None:
    class Repr:
        def toterminal(self, writer: Any) -> None:
            assert writer.hasmarkup is False
            writer.line("first line")
            writer.line("second line")

    assert report_text(SimpleNamespace(longrepr=Repr())) == "first line\nsecond line"


PLAIN_PLUGIN = """
import pytest
from pytest_imagetime.plugin.failure_text import PlainFailures, report_text

class Unmet(Exception):
    pass

class Item(PlainFailures, pytest.Item):
    plain_failures = (Unmet,)

    def runtest(self):
        raise {raised}

class File(pytest.File):
    def collect(self):
        yield Item.from_parent(self, name="one")

def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".case":
        return File.from_parent(parent, path=file_path)

TEXTS = []

def pytest_runtest_logreport(report):
    if report.failed:
        TEXTS.append(report_text(report))

def pytest_sessionfinish(session):
    print("TEXT<<" + "\\n".join(TEXTS) + ">>TEXT")
"""


def _failure_text(pytester: pytest.Pytester, raised: str) -> str:
    pytester.makeconftest(PLAIN_PLUGIN.format(raised=raised))
    pytester.makefile(".case", one="")
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    return out[out.index("TEXT<<") + 6:out.index(">>TEXT")]


def test_a_listed_failure_is_shown_by_its_message_alone(pytester: pytest.Pytester) -> None:
    text = _failure_text(pytester, 'Unmet("predicate p2 not satisfied")')
    assert text == "predicate p2 not satisfied"


def test_any_other_failure_keeps_its_traceback(pytester: pytest.Pytester) -> None:
    text = _failure_text(pytester, 'KeyError("lost")')
    assert "KeyError: 'lost'" in text
    assert "def runtest" in text
    assert not text.startswith("[gw")
