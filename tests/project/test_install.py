"""Installing beside a user's own torch, and running on any operating system.

The published wheel states lower bounds only, so pip keeps a CUDA (or ROCm) torch that is
already installed; the project's own pins live in constraints/dev.txt, which no user install
reads. Nothing POSIX-only is imported unguarded: the package imports, and a run works, with
``fcntl`` and the other POSIX-only modules unimportable, as on Windows.
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
import time
import zipfile
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import IO

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from pytest_imagetime.store.file_lock import WINDOWS_BUSY, exclusive, windows_lock

ROOT = Path(__file__).resolve().parents[2]
DEV_TORCH = "2.13.0"  # constraints/dev.txt's pin
USERS_TORCH = "2.6.0+cu124"  # a CUDA build, as a model team has it

# The published requirements, each faked as an empty wheel of the lowest version allowed, so
# that pip's real resolver runs offline over exactly our wheel's metadata.
FAKE_DISTRIBUTIONS: dict[str, tuple[str, list[str]]] = {
    "pytest": ("9.2.0", []),
    "pillow": ("10.0.0", []),
    "numpy": ("1.26.0", []),
    "jsonschema": ("4.18.0", []),
    "pyyaml": ("6.0", []),
    "diffusers": ("0.30.0", []),
    "transformers": ("4.44.0", []),
    "accelerate": ("0.30.0", ["torch>=1.10.0"]),
}


def _build_wheel(out: Path) -> Path:
    """The wheel as published, built from this checkout by its own build backend."""
    out.mkdir(parents=True, exist_ok=True)
    code = "import sys; from hatchling.build import build_wheel; print(build_wheel(sys.argv[1]))"
    built = subprocess.run([sys.executable, "-c", code, str(out)], cwd=ROOT, check=True,
                           capture_output=True, text=True)
    return out / built.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build_wheel(tmp_path_factory.mktemp("wheel"))


def _requires_dist(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    return [Requirement(line.partition(":")[2].strip()) for line in metadata.splitlines()
            if line.startswith("Requires-Dist:")]


def _extra_of(requirement: Requirement) -> str | None:
    for extra in ("diffusers", "openai", "figures", "xdist", "test", "lint"):
        if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
            return extra
    return None


@pytest.mark.slow
def test_published_requirements_state_lower_bounds_only(wheel: Path) -> None:
    requirements = _requires_dist(wheel)
    assert requirements, "the wheel lists no requirements"
    pinned = [f"{r} (extra {_extra_of(r)})" for r in requirements
              if any(spec.operator != ">=" for spec in r.specifier)]
    assert pinned == [], "published requirements must state lower bounds only"
    torches = {_extra_of(r): str(r.specifier) for r in requirements if r.name == "torch"}
    assert torches == {"diffusers": ">=2.1", "test": ">=2.1"}


def test_the_projects_own_torch_is_pinned_by_its_constraints_file() -> None:
    constraints = [line.strip() for line in
                   (ROOT / "constraints" / "dev.txt").read_text(encoding="utf-8").splitlines()
                   if line.strip() and not line.startswith("#")]
    assert constraints == [f"torch=={DEV_TORCH}"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -q -c constraints/dev.txt -e '.[test,lint]'" in ci
    assert "PIP_CONSTRAINT = {toxinidir}/constraints/dev.txt" in \
        (ROOT / "tox.ini").read_text(encoding="utf-8")


def _fake_wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    """An installable wheel with metadata only: enough for pip's resolver and installer."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{canonicalize_name(name).replace('-', '_')}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    files = {
        f"{dist}.dist-info/METADATA": "".join(
            [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             *(f"Requires-Dist: {r}\n" for r in requires)]),
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: fake\nRoot-Is-Purelib: true\n"
                                   "Tag: py3-none-any\n",
    }
    record = "".join(f"{n},,\n" for n in files) + f"{dist}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
        archive.writestr(f"{dist}.dist-info/RECORD", record)
    return path


def _pip(python: Path, *args: str, index: Path | None) -> subprocess.CompletedProcess[str]:
    """This interpreter's pip, working on ``python``'s environment, blind to pip's
    configuration; offline over ``index`` unless it is None (then PyPI)."""
    where = ["--no-index", "--find-links", str(index)] if index is not None else []
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "--isolated",
                           "--disable-pip-version-check", *args, *where],
                          capture_output=True, text=True, env=env, check=False)


def _environment_with_cuda_torch(root: Path) -> tuple[Path, Path]:
    """A fresh virtual environment holding a CUDA build of torch, and a folder of wheels."""
    wheels = root / "wheels"
    for name, (version, requires) in FAKE_DISTRIBUTIONS.items():
        _fake_wheel(wheels, name, version, requires)
    _fake_wheel(wheels, "torch", DEV_TORCH, [])  # what an exact pin would pull in
    users = _fake_wheel(root / "users", "torch", USERS_TORCH, [])
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")],
                   check=True)
    python = root / "venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    installed = _pip(python, "install", "--no-deps", str(users), index=None)
    assert installed.returncode == 0, installed.stderr
    return python, wheels


def _would_install(python: Path, requirement: str, index: Path | None,
                   report: Path) -> dict[str, str]:
    result = _pip(python, "install", "--dry-run", "--quiet", "--report", str(report),
                  requirement, index=index)
    assert result.returncode == 0, result.stderr
    planned = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {canonicalize_name(p["metadata"]["name"]): p["metadata"]["version"] for p in planned}


@pytest.mark.slow
def test_installing_the_diffusers_extra_keeps_a_cuda_torch(wheel: Path, tmp_path: Path) -> None:
    python, wheels = _environment_with_cuda_torch(tmp_path)
    planned = _would_install(python, f"{wheel}[diffusers]", wheels, tmp_path / "ours.json")
    assert "pytest-imagetime" in planned
    assert "torch" not in planned, f"pip would replace torch {USERS_TORCH}: {planned}"
    # The same resolver over an exact pin, as the extras had it, does replace it: this test
    # sees the failure it guards against.
    pinned = _fake_wheel(tmp_path / "pinned", "pinned-extra", "1.0", [f"torch=={DEV_TORCH}"])
    assert _would_install(python, str(pinned), wheels, tmp_path / "pinned.json")["torch"] \
        == DEV_TORCH


@pytest.mark.network
@pytest.mark.slow
def test_pypi_resolver_keeps_a_cuda_torch(wheel: Path, tmp_path: Path) -> None:
    """The real published dependencies from PyPI, beside a CUDA torch already installed."""
    python, _ = _environment_with_cuda_torch(tmp_path)
    planned = _would_install(python, f"{wheel}[diffusers]", None, tmp_path / "pypi.json")
    assert {"pytest-imagetime", "diffusers", "transformers", "accelerate"} <= set(planned)
    assert "torch" not in planned, f"pip would replace torch {USERS_TORCH}: {planned}"


# ------------------------------------------------------------------ no POSIX-only imports

POSIX_ONLY = ("fcntl", "termios", "pwd", "grp", "resource")

# Loaded first by every Python process of the run (workers and children too): these modules
# cannot be imported, as on Windows, and each attempt is logged with the module that made it.
_BLOCKER = """
import importlib.abc, os, sys, traceback

class _PosixOnly(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in {blocked!r}:
            caller = "".join(traceback.format_stack(limit=4)[:-1])
            with open(os.environ["IMAGETIME_BLOCKED_LOG"], "a", encoding="utf-8") as log:
                log.write(f"{{name}}\\n{{caller}}\\n")
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _PosixOnly())
"""


@pytest.fixture
def without_posix_modules(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_BLOCKER.format(blocked=set(POSIX_ONLY)),
                                           encoding="utf-8")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT / "src"),
                                         env.get("PYTHONPATH", "")])
    env["IMAGETIME_BLOCKED_LOG"] = str(tmp_path / "blocked.log")
    env.pop("PYTEST_ADDOPTS", None)
    # A text file opened without an encoding reads the locale's (cp1252 on Windows): warned of.
    env["PYTHONWARNDEFAULTENCODING"] = "1"
    return env


def _default_encodings(output: str) -> list[str]:
    """Our own text reads and writes that took the locale's encoding."""
    return [line for line in output.splitlines()
            if "EncodingWarning" in line and "pytest_imagetime" in line]


def _ours(log: Path) -> list[str]:
    """Attempts that came from this package's own code."""
    if not log.exists():
        return []
    entries = log.read_text(encoding="utf-8").split("\n\n")
    return [e for e in entries if "pytest_imagetime" in e]


@pytest.mark.slow
def test_every_module_imports_without_posix_only_modules(
        without_posix_modules: dict[str, str], tmp_path: Path) -> None:
    code = ("import importlib, pkgutil, sys, pytest_imagetime\n"
            "for m in pkgutil.walk_packages(pytest_imagetime.__path__, 'pytest_imagetime.'):\n"
            "    importlib.import_module(m.name)\n"
            f"print(sorted(set(sys.modules) & {set(POSIX_ONLY)!r}))\n")
    result = subprocess.run([sys.executable, "-W", "always::EncodingWarning", "-c", code],
                            env=without_posix_modules, capture_output=True, text=True,
                            check=False, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
    assert _default_encodings(result.stderr) == []
    assert _ours(tmp_path / "blocked.log") == []


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_run_works_without_posix_only_modules(
        without_posix_modules: dict[str, str], tmp_path: Path, workers: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-W", "always::EncodingWarning", "-m", "pytest", "-p", "no:cacheprovider",
         "-W", "always::EncodingWarning", "--imagetime-model=procedural",
         "--imagetime-judge=pixel", "--imagetime-size=128", "-k", "pour-water", "-q",
         f"--imagetime-out={tmp_path / 'out'}", *workers],
        env=without_posix_modules, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout
    assert (tmp_path / "out" / "procedural" / "pixel" / "report.json").is_file()
    assert _default_encodings(result.stdout + result.stderr) == []
    assert _ours(tmp_path / "blocked.log") == []


# ------------------------------------------------------------------ the lock itself

POLL_S = 0.01  # how often a waiting process looks again (a wait, never an assertion)


def _hold(path: str, held: str, release: str) -> None:
    with exclusive(Path(path)):
        Path(held).touch()
        while not Path(release).exists():
            time.sleep(POLL_S)


def _wait_for(path: Path, process: BaseProcess) -> None:
    while not path.exists():
        assert process.exitcode is None, "the lock holder died"
        time.sleep(POLL_S)


@pytest.mark.skipif(sys.platform == "win32", reason="probes the lock with POSIX flock")
def test_exclusive_lock_is_held_across_processes(tmp_path: Path) -> None:
    import fcntl
    import multiprocessing

    lock, held, release = tmp_path / "locks" / "case.lock", tmp_path / "held", tmp_path / "go"
    holder = multiprocessing.get_context("spawn").Process(
        target=_hold, args=(str(lock), str(held), str(release)))
    holder.start()
    try:
        _wait_for(held, holder)
        with open(lock, "a+b") as probe:
            with pytest.raises(BlockingIOError):
                fcntl.flock(probe.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            release.touch()
            holder.join()
            fcntl.flock(probe.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # released at its end
    finally:
        release.touch()
        holder.join()
    assert holder.exitcode == 0


class FakeMsvcrt:
    """msvcrt.locking's contract: LK_LOCK fails with EDEADLOCK after its ten tries."""

    LK_LOCK = 1
    LK_UNLCK = 0

    def __init__(self, handle: IO[bytes], busy_tries: int, failure: int | None = None) -> None:
        self.handle = handle
        self.busy_tries = busy_tries
        self.failure = failure
        self.calls: list[tuple[str, int, int]] = []

    def locking(self, fd: int, mode: int, nbytes: int, /) -> None:
        assert fd == self.handle.fileno() and nbytes == 1
        self.calls.append(("lock" if mode == self.LK_LOCK else "unlock", self.handle.tell(),
                           nbytes))
        if mode == self.LK_LOCK and self.failure is not None:
            raise OSError(self.failure, os.strerror(self.failure))
        if mode == self.LK_LOCK and self.busy_tries:
            self.busy_tries -= 1
            raise OSError(errno.EDEADLK, "Resource deadlock avoided")


def test_windows_lock_waits_out_a_long_holder_and_locks_the_first_byte(tmp_path: Path) -> None:
    with open(tmp_path / "case.lock", "a+b") as handle:
        handle.write(b"xx")  # the position after a write is the end: the lock seeks back
        fake = FakeMsvcrt(handle, busy_tries=3)
        with windows_lock(handle, fake):
            assert fake.calls == [("lock", 0, 1)] * 4
            handle.seek(0, io.SEEK_END)
        assert fake.calls[-1] == ("unlock", 0, 1)
    assert errno.EDEADLK in WINDOWS_BUSY


def test_windows_lock_raises_any_other_failure(tmp_path: Path) -> None:
    with open(tmp_path / "case.lock", "a+b") as handle:
        fake = FakeMsvcrt(handle, busy_tries=0, failure=errno.EBADF)
        with pytest.raises(OSError, match="Bad file descriptor"), windows_lock(handle, fake):
            pytest.fail("the lock was not taken, the block must not run")
        assert [c[0] for c in fake.calls] == ["lock"]
