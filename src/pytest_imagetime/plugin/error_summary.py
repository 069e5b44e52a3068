"""Item errors in the terminal: one line per item, and how many share each reason.

A run whose items all fail the same way (a wrong folder, a dead endpoint) then reads as one
reason with its count, with each item still listed once for a CI log to search.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

CASE_PLACEHOLDER = "<case>"


@dataclass(frozen=True)
class ItemErrorLine:
    nodeid: str
    case_id: str
    reason: str

    def line(self) -> str:
        return f"ERROR {self.nodeid} - {one_line(self.reason)}"


def one_line(text: str) -> str:
    """A reason of several lines (a server's answer, say) on one, its lines joined by |."""
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


def common_reason(case_id: str, reason: str) -> str:
    """The reason on one line with its case id written as ``<case>``: the same failure of
    two cases then reads the same."""
    reason = one_line(reason)
    return reason.replace(case_id, CASE_PLACEHOLDER) if case_id else reason


def reason_counts(errors: Iterable[ItemErrorLine]) -> list[tuple[int, str]]:
    """Each distinct reason (``common_reason``) with its count, the most frequent first, ties
    in the order of their first item."""
    counts = Counter(common_reason(e.case_id, e.reason) for e in errors)
    return [(n, reason) for reason, n in sorted(counts.items(), key=lambda kv: -kv[1])]


def summary_lines(errors: list[ItemErrorLine], per_item: bool) -> list[str]:
    """The item lines (when ``per_item``), then the count of each reason."""
    lines = [e.line() for e in errors] if per_item else []
    counts = reason_counts(errors)
    noun = "error" if len(errors) == 1 else "errors"
    kinds = "reason" if len(counts) == 1 else "distinct reasons"
    lines.append(f"{len(errors)} item {noun}, {len(counts)} {kinds}:")
    width = len(str(counts[0][0])) if counts else 1
    lines.extend(f"  {n:>{width}} x {reason}" for n, reason in counts)
    return lines
