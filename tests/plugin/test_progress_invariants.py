"""The progress line's invariants: printed at most every interval and always at the end,
never a spend of $0.00 for calls of unknown price, durations that read back."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.plugin.progress import Progress, _duration


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


items = st.lists(st.tuples(st.floats(0, 30), st.one_of(st.none(), st.floats(0, 10)),
                           st.booleans(), st.one_of(st.none(), st.floats(0, 1))),
                 min_size=1, max_size=40)


@given(items, st.floats(0.5, 20))
def test_lines_come_at_most_every_interval_and_at_the_end(
        steps: list[tuple[float, float | None, bool, float | None]], every: float) -> None:
    clock = _Clock()
    written: list[tuple[float, str]] = []
    progress = Progress(every, lambda line: written.append((clock.now, line)), clock)
    progress.expect(len(steps))
    for wait, overall, error, spent in steps:
        clock.now += wait
        progress.item(overall, error, spent)
    previous = 0.0
    for printed, _ in written[:-1]:  # before the last item, only when the interval has passed
        assert printed - previous >= every
        previous = printed
    assert written and written[-1][0] == clock.now  # the last item always prints
    last = written[-1][1]
    assert last.startswith(f"[imagetime] {len(steps)}/{len(steps)} done, "
                           f"{sum(e for _, _, e, _ in steps)} errors, ")
    assert last.endswith("ETA 0s")
    if any(spent is None for *_, spent in steps):
        assert "unknown" in last
    else:
        assert re.search(r"spent \$\d+\.\d\d,", last)


def test_the_known_part_of_an_unknown_spend_is_kept() -> None:
    progress = Progress(0, lambda line: None)
    progress.item(5.0, False, 0.25)
    progress.item(None, True, None)
    assert "spent $0.25 + unknown" in progress.line(0.0)
    nothing_known = Progress(0, lambda line: None)
    nothing_known.item(None, False, None)
    assert "spent unknown," in nothing_known.line(0.0)


@given(st.integers(0, 200_000))
def test_durations_read_back(seconds: int) -> None:
    text = _duration(seconds)
    match = re.fullmatch(r"(?:(\d+)h(\d\d)m|(\d+)m(\d\d)s|(\d+)s)", text)
    assert match is not None
    hours, minutes_h, minutes, secs, only = match.groups()
    if hours is not None:
        assert int(hours) * 3600 + int(minutes_h) * 60 <= seconds < (int(hours) * 60
                                                                    + int(minutes_h) + 1) * 60
    elif minutes is not None:
        assert int(minutes) * 60 + int(secs) == seconds and 60 <= seconds < 3600
    else:
        assert int(only) == seconds < 60


def test_a_fraction_of_a_second_rounds_up() -> None:
    assert _duration(0.2) == "1s" and _duration(-3) == "0s" and _duration(59.5) == "1m00s"
