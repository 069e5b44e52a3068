"""The ``imagetime`` command's output to a reader that stops early, as ``| head`` does."""

from __future__ import annotations

import subprocess
import sys

RUN = "import sys; from pytest_imagetime.cli import main; sys.exit(main(sys.argv[1:]))"


def test_a_reader_that_stops_early_gets_no_error_message() -> None:
    child = subprocess.Popen([sys.executable, "-c", RUN, "cases", "list"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the child writes: its first write finds no reader
    errors = child.stderr.read().decode()
    assert child.wait(timeout=120) == 1
    assert errors == ""
