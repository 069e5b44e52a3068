"""The commands in README.md and docs/*.md run as copied.

Every shell command of a ``bash`` block (and every ``run:`` line of a ``yaml`` block) is taken
out of the documents: each ``--imagetime-*`` option, ini key and marker named anywhere must
exist; each ``pytest`` command must parse with the plugin's own options; each ``imagetime``
command with the command's own parser; a command that needs a key must say so in its block;
the offline ones must collect in an empty folder (a machine without this checkout); and the
offline quick start really runs.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomllib

from pytest_imagetime.cli import build_parser
from pytest_imagetime.plugin.options import Options, parse_options
from pytest_imagetime.report.json_report import validate_report

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# Values the documents leave to the shell or the CI system, as one task of each would see them.
VARIABLES = {"${SLURM_ARRAY_TASK_ID}": "1", "${{ matrix.shard }}": "1",
             "$ANSWERS": "answers.csv"}
# Parts of a command that stand for the reader's own things: such a command is checked for
# its options but not run.
STAND_INS = ("my_cases/", "/data/sheets", "my-model", "my-image-model", "org/",
             "/models/", "../shared/tempviz", "baseline/")
SEPARATORS = {"&&", "||", ";", "|"}


@dataclass(frozen=True)
class Command:
    where: str  # document:line
    argv: tuple[str, ...]
    block: str  # the whole block, for what it says around the command

    @property
    def pytest_args(self) -> list[str] | None:
        """The arguments after ``pytest`` or ``python3 -m pytest``; None for other programs."""
        argv = list(self.argv)
        if argv[:1] == ["pytest"]:
            return argv[1:]
        if len(argv) >= 3 and argv[0] in ("python", "python3") and argv[1:3] == ["-m", "pytest"]:
            return argv[3:]
        return None

    @property
    def stand_in(self) -> bool:
        return any(part in word for word in self.argv for part in STAND_INS)


def _blocks(path: Path) -> list[tuple[str, int, str]]:
    """(language, line of its first line, text) of every fenced block."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        line = text.count("\n", 0, match.start(2)) + 1
        found.append((match.group(1), line, match.group(2)))
    return found


def _shell_lines(language: str, first: int, text: str) -> list[tuple[int, str]]:
    """The block's commands as (line, text): continuations joined, yaml's ``run:`` values."""
    lines: list[tuple[int, str]] = []
    pending = ""
    start = first
    for number, raw in enumerate(text.splitlines(), first):
        if language == "yaml":
            found = re.search(r"\brun:\s*(.+)$", raw)
            if found:
                lines.append((number, found.group(1)))
            continue
        if not pending:
            start = number
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        lines.append((start, pending + raw))
        pending = ""
    return lines


def documented_commands() -> list[Command]:
    commands = []
    for path in DOCUMENTS:
        for language, first, text in _blocks(path):
            if language not in ("bash", "sh", "yaml"):
                continue
            for number, line in _shell_lines(language, first, text):
                for name, value in VARIABLES.items():
                    line = line.replace(name, value)
                words = shlex.split(line, comments=True)
                argv: list[str] = []
                for word in [*words, ";"]:
                    if word in SEPARATORS:
                        if argv:
                            commands.append(Command(f"{path.relative_to(ROOT)}:{number}",
                                                    tuple(argv), text))
                        argv = []
                    else:
                        argv.append(word)
    return commands


COMMANDS = documented_commands()
# The project's own test suite (``pytest tests/...``) is run by CI, not parsed here: its
# options live in its conftest.
PYTEST = [c for c in COMMANDS if c.pytest_args is not None and "..." not in c.argv
          and not any(word.startswith("tests/") for word in c.argv)]
IMAGETIME = [c for c in COMMANDS if c.argv[0] == "imagetime"]


def test_the_documents_hold_commands_of_every_kind() -> None:
    assert len(PYTEST) >= 20 and len(IMAGETIME) >= 15
    assert {c.where.partition(":")[0] for c in COMMANDS} >= {"README.md", "docs/judging.md",
                                                           "docs/tempviz.md"}


# ------------------------------------------------------------------ names

def _help_text(pytester: pytest.Pytester, *args: str) -> str:
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.OK
    return result.stdout.str()


def test_every_option_ini_key_and_marker_named_exists(pytester: pytest.Pytester) -> None:
    options = set(re.findall(r"--imagetime-[a-z0-9-]+", _help_text(pytester, "--help")))
    markers = set(re.findall(r"@pytest\.mark\.(imagetime\w*)", _help_text(pytester,
                                                                          "--markers")))
    config = pytester.parseconfig()
    unknown = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        # A name followed by <, * or - is a pattern (--imagetime-no-<name>), not an option.
        for name in sorted(set(re.findall(r"--imagetime-[a-z0-9-]*[a-z0-9](?![-<*\w])", text))):
            if name not in options:
                unknown.append(f"{path.name}: option {name}")
        for key in sorted(set(re.findall(r"\bimagetime_[a-z0-9_]*[a-z0-9]\b", text))):
            if key in markers or key.startswith("imagetime_domain_"):
                continue
            try:
                config.getini(key)
            except ValueError:
                unknown.append(f"{path.name}: ini key {key}")
    assert unknown == []


def test_every_document_the_readme_names_exists() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"\b(docs/[\w-]+\.md|benchmarks/\w+\.py|constraints/[\w.]+)", text))
    assert named and sorted(n for n in named if not (ROOT / n).is_file()) == []


# ------------------------------------------------------------------ each command parses

# A batch system's task, as a command with --imagetime-shard=auto sees it: task 1 of a Slurm
# array 1-4.
BATCH_TASK = {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1",
              "SLURM_ARRAY_TASK_MAX": "4", "SLURM_ARRAY_TASK_COUNT": "4"}


@contextlib.contextmanager
def _as_batch_task() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in BATCH_TASK.items():
            patch.setenv(name, value)
        yield


def _parsed(pytester: pytest.Pytester, command: Command) -> Options:
    args = command.pytest_args
    assert args is not None
    try:
        with _as_batch_task():
            return parse_options(pytester.parseconfig(*args))
    except pytest.UsageError as exc:
        pytest.fail(f"{command.where}: {shlex.join(command.argv)}: {exc}")


@pytest.mark.parametrize("command", PYTEST, ids=[c.where for c in PYTEST])
def test_documented_pytest_commands_parse(pytester: pytest.Pytester, command: Command) -> None:
    _parsed(pytester, command)


@pytest.mark.parametrize("command", IMAGETIME, ids=[c.where for c in IMAGETIME])
def test_documented_imagetime_commands_parse(command: Command) -> None:
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            build_parser().parse_args(list(command.argv[1:]))
    except SystemExit:
        pytest.fail(f"{command.where}: {shlex.join(command.argv)}: {errors.getvalue()}")


def _needs_key(options: Options) -> bool:
    judged_by_vlm = options.suite == "tempviz" or options.judge.partition(":")[0] in (
        "vlm", "vlm-chain")
    hosted_model = any(m.partition(":")[0] == "openai-images" for m in options.models)
    return bool(options.models) and not options.dry_run and (
        (judged_by_vlm and options.judge_options.key_env is not None)
        or (hosted_model and options.model_options.key_env is not None))


@pytest.mark.parametrize("command", PYTEST, ids=[c.where for c in PYTEST])
def test_a_command_that_needs_a_key_says_so(pytester: pytest.Pytester,
                                            command: Command) -> None:
    if _needs_key(_parsed(pytester, command)):
        assert "OPENAI_API_KEY" in command.block, (
            f"{command.where}: {shlex.join(command.argv)} needs OPENAI_API_KEY (the vlm judge "
            "or a hosted model) and its block does not say so; or add --imagetime-judge=pixel")


# ------------------------------------------------------------------ offline commands run

def _offline(pytester: pytest.Pytester) -> list[Command]:
    return [c for c in PYTEST if not c.stand_in and not _needs_key(_parsed(pytester, c))
            and _parsed(pytester, c).models]


@pytest.mark.slow
def test_offline_commands_collect_on_a_machine_without_the_checkout(
        pytester: pytest.Pytester) -> None:
    offline = _offline(pytester)
    assert len(offline) >= 6
    for command in offline:
        args = command.pytest_args
        assert args is not None
        with _as_batch_task():
            result = pytester.runpytest(*args, "--collect-only", "-q", "-p", "no:cacheprovider")
        assert result.ret == pytest.ExitCode.OK, f"{command.where}: {result.stdout.str()}"
        counts = re.findall(r"(\d+) tests? collected", result.stdout.str())
        assert counts and int(counts[-1]) > 0, f"{command.where}: nothing collected"


def _quick_start() -> Command:
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Quick start")[1]
    first = section.split("```bash\n")[1].split("```")[0]
    return next(c for c in PYTEST if c.block == first)


@pytest.mark.slow
def test_the_offline_quick_start_runs_as_copied(tmp_path: Path) -> None:
    command = _quick_start()
    install = next(c for c in COMMANDS if c.block == command.block and "pip" in c.argv)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    wanted = re.fullmatch(r"\.\[([\w,]+)\]", install.argv[-1])
    assert wanted and set(wanted.group(1).split(",")) <= set(extras)
    args = command.pytest_args
    assert args is not None
    # On a subset of the cases, in an empty folder: the run, its reports and its summary.
    result = subprocess.run([sys.executable, "-m", "pytest", *args, "-k", "pour-water",
                             "--imagetime-size=128", "-p", "no:cacheprovider"],
                            cwd=tmp_path, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ImageTime summary" in result.stdout and "4 passed" in result.stdout
    report = json.loads((tmp_path / "reports" / "procedural" / "pixel" / "report.json")
                        .read_text(encoding="utf-8"))
    validate_report(report)
    assert report["aggregate"]["n"] == 4


def test_ci_runs_the_readmes_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    test_block = next(text for language, _, text in _blocks(ROOT / "README.md")
                      if language == "bash" and "-e '.[test]'" in text)
    assert "-c constraints/dev.txt -e '.[test]'" in test_block
    assert "-c constraints/dev.txt -e '.[test,lint]'" in ci
    assert "python3 -m pytest -n 2" in test_block
    assert re.search(r"^python -m pytest -n 2$", ci, re.M)
    assert "this is what `.ci/run` runs" in readme
