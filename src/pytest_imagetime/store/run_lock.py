"""Which sessions write a model's folder, so that two with different settings never do at once.

Every session that writes ``<out>/<model>/`` leaves a claim there, one small JSON file
(``.imagetime-sessions/<host>-<pid>.json``) naming its process, host, start, command and
settings, and removes it when it ends. A new session reads the claims first: one with other
settings for the same files (another seed or size overwrites the same sheets; another judge
configuration the same judgments) is refused, naming the holder. Sessions with the same
settings may share the folder (they write the same files). A claim of a process that no
longer runs on this host is stale and removed; a claim from another host is trusted until it
is deleted (the message says which file).

Portable by design: plain files, no fcntl; whether a process runs is asked of the system
(``os.kill(pid, 0)`` on POSIX, OpenProcess on Windows).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

CLAIMS = ".imagetime-sessions"


def host_name() -> str:
    """This machine's name, reduced to what a file name may hold on every system."""
    return re.sub(r"[^A-Za-z0-9_-]+", "-", socket.gethostname()).strip("-") or "host"


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine."""
    if pid <= 0:
        return False
    if sys.platform == "win32":
        return _windows_process_alive(pid)
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, as another user's process
    except OSError:
        return False
    return True


def _windows_process_alive(pid: int) -> bool:
    import ctypes

    if sys.platform != "win32":  # called on Windows only; lets mypy check this on every OS
        raise OSError("the Windows process check runs on Windows only")
    query_limited_information, still_active, access_denied = 0x1000, 259, 5
    kernel32 = ctypes.windll.kernel32
    handle = kernel32.OpenProcess(query_limited_information, False, pid)
    if not handle:
        return bool(kernel32.GetLastError() == access_denied)
    try:
        code = ctypes.c_ulong()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == still_active
    finally:
        kernel32.CloseHandle(handle)


class SettingsConflict(RuntimeError):
    """Another live session writes the same folder with other settings."""


@dataclass(frozen=True)
class Claim:
    """One session's claim on a model folder."""

    path: Path
    data: Mapping[str, Any]

    @property
    def pid(self) -> int:
        value = self.data.get("pid")
        return value if isinstance(value, int) else -1

    @property
    def host(self) -> str:
        return str(self.data.get("host", ""))

    def stale(self) -> bool:
        return self.host == host_name() and not process_alive(self.pid)

    def describe(self) -> str:
        return (f"pid {self.pid} on host {self.host or '?'} since "
                f"{self.data.get('started', '?')}")


def _read_claims(folder: Path) -> list[Claim]:
    claims = []
    try:
        entries = sorted((folder / CLAIMS).glob("*.json"))
    except OSError:
        return []
    for path in entries:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being written, or removed meanwhile
        if isinstance(data, dict):
            claims.append(Claim(path, data))
    return claims


def differences(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[str]:
    """The settings in which two claims clash: the sheet's settings always, the judge's
    configuration when both write the same judge folder."""
    found = []
    ours, others = mine.get("sheets", {}), theirs.get("sheets", {})
    for key in sorted(set(ours) | set(others)):
        if ours.get(key) == others.get(key):
            continue
        if key.endswith("_sha256"):  # a digest says only that they differ
            found.append(f"another {key.removesuffix('_sha256').replace('_', ' ')}")
        else:
            found.append(f"{key} {others.get(key)!r} there, {ours.get(key)!r} here")
    for folder, judge in mine.get("judges", {}).items():
        other = theirs.get("judges", {}).get(folder)
        if other is not None and other != judge:
            found.append(f"the judge {folder!r} is configured otherwise")
    return found


class FolderClaims:
    """This session's claims, one per model folder it writes; released when it ends."""

    def __init__(self) -> None:
        self.held: list[Path] = []
        self._made: list[Path] = []  # folders made for a claim, removed with it if empty

    def claim(self, folder: Path, settings: Mapping[str, Any]) -> None:
        """Claim ``folder``; raises SettingsConflict naming a live holder with other
        settings. Stale claims (their process is gone from this host) are removed."""
        # Through JSON, as the other claims are read: a tuple and its list then compare equal.
        mine = json.loads(json.dumps({
            "pid": os.getpid(), "host": host_name(),
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "command": sys.argv, **settings}, default=str))
        self._check(folder, mine)
        path = folder / CLAIMS / f"{mine['host']}-{mine['pid']}.json"
        missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
        path.parent.mkdir(parents=True, exist_ok=True)
        self._made.extend(missing)  # deepest first
        path.write_text(json.dumps(mine, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        self.held.append(path)
        try:  # a session that claimed at the same moment: the later look sees it
            self._check(folder, mine)
        except SettingsConflict:
            self.release()
            raise

    def _check(self, folder: Path, mine: Mapping[str, Any]) -> None:
        for claim in _read_claims(folder):
            if claim.pid == mine["pid"] and claim.host == mine["host"]:
                continue
            if claim.stale():
                with contextlib.suppress(OSError):
                    claim.path.unlink()
                continue
            clash = differences(mine, claim.data)
            if clash:
                raise SettingsConflict(
                    f"another session writes {folder} with other settings ({'; '.join(clash)})"
                    f": {claim.describe()}. Wait for it to end, give this run another "
                    f"--imagetime-out, or, if that session no longer runs, delete {claim.path}")

    def release(self) -> None:
        """Remove this session's claims, and the claims folders and any folder made for them
        that nothing else was written into (a run refused before its first item leaves none)."""
        for path in self.held:
            with contextlib.suppress(OSError):
                path.unlink()
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # only when no other session's claim is left
        for folder in self._made:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
        self.held.clear()
        self._made.clear()
