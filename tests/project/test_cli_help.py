"""``imagetime --help`` and a research subcommand's ``--help`` build their parsers only: none
of the heavy libraries that the subcommands' runners import is loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("numpy", "PIL", "openai", "jsonschema")

# A fresh interpreter, so that no module another test imported counts.
PROBE = f"""
import sys
from pytest_imagetime.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
loaded = sorted({{name.split(".")[0] for name in sys.modules}} & set({HEAVY!r}))
print("heavy:", ",".join(loaded))
"""


@pytest.mark.parametrize("argv", [["--help"], ["tempviz", "prf", "--help"],
                                  ["baseline", "clipscore", "--help"]])
def test_help_imports_no_heavy_library(argv: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                          check=True, timeout=120)
    assert "usage: imagetime" in done.stdout
    assert done.stdout.splitlines()[-1] == "heavy: "
