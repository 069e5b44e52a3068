"""Item errors in the terminal: one line an item, reasons counted across cases."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.plugin.error_summary import (
    CASE_PLACEHOLDER,
    ItemErrorLine,
    common_reason,
    one_line,
    reason_counts,
    summary_lines,
)


def _error(case_id: str, reason: str) -> ItemErrorLine:
    return ItemErrorLine(f"cases.yaml::{case_id}[m]", case_id, reason)


def test_a_reason_of_several_lines_reads_on_one() -> None:
    assert one_line("server said:\n  500 internal\n\n  retry later  ") == (
        "server said: | 500 internal | retry later")
    assert _error("a", "x\ny").line() == "ERROR cases.yaml::a[m] - x | y"


def test_the_case_id_is_written_as_a_placeholder() -> None:
    assert common_reason("kitchen-1", "model failed on kitchen-1: oom") == (
        f"model failed on {CASE_PLACEHOLDER}: oom")
    assert common_reason("", "no case here") == "no case here"


def test_counts_most_frequent_first_ties_in_first_order() -> None:
    ids = [f"kitchen-stir-tea-{n}" for n in range(6)]
    errors = [_error(ids[0], "judge down"), _error(ids[1], f"model failed on {ids[1]}"),
              _error(ids[2], f"model failed on {ids[2]}"), _error(ids[3], "disk full"),
              _error(ids[4], "judge down"), _error(ids[5], f"model failed on {ids[5]}")]
    assert reason_counts(errors) == [(3, f"model failed on {CASE_PLACEHOLDER}"),
                                     (2, "judge down"), (1, "disk full")]


def test_summary_lines_with_and_without_the_items() -> None:
    errors = [_error(f"c{n}", "judge down") for n in range(12)] + [_error("x", "oom")]
    lines = summary_lines(errors, per_item=True)
    assert lines[:13] == [e.line() for e in errors]
    assert lines[13:] == ["13 item errors, 2 distinct reasons:", "  12 x judge down",
                          "   1 x oom"]
    assert summary_lines(errors[:1], per_item=False) == ["1 item error, 1 reason:",
                                                        "  1 x judge down"]
    assert summary_lines([], per_item=True) == ["0 item errors, 0 distinct reasons:"]


reasons = st.sampled_from(["judge down", "oom on {case}", "bad\nanswer", "disk full"])


@given(st.lists(st.tuples(st.sampled_from([f"sports-kick-{n}" for n in range(4)]), reasons),
                max_size=30))
def test_counts_add_up_and_fall(pairs: list[tuple[str, str]]) -> None:
    errors = [_error(case, reason.format(case=case)) for case, reason in pairs]
    counts = reason_counts(errors)
    assert sum(n for n, _ in counts) == len(errors)
    assert [n for n, _ in counts] == sorted((n for n, _ in counts), reverse=True)
    assert len({reason for _, reason in counts}) == len(counts)
    assert all("\n" not in reason for _, reason in counts)
    lines = summary_lines(errors, per_item=True)
    assert len(lines) == len(errors) + 1 + len(counts)
