"""Stored data stays trustworthy: damaged judgments and sheets, duplicate case ids, files
left by a killed run, and two sessions writing one output directory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_imagetime.report.json_report import validate_report
from tests.builders import case_dict, write_case_file


@pytest.fixture(autouse=True)
def offline_judge(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "--imagetime-judge=pixel")


ARGS = ("kitchen.yaml", "--imagetime-model=procedural", "--imagetime-size=128")


def _two_cases(pytester: pytest.Pytester) -> None:
    write_case_file(pytester.path / "kitchen.yaml", [
        case_dict("kitchen-pour-water-1"),
        case_dict("kitchen-pour-water-2", variant=2,
                  setup={"scene": "a marble counter", "style": "flat illustration",
                         "camera": "top-down view"})])


def _report(pytester: pytest.Pytester) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(
        (pytester.path / "reports/procedural/pixel/report.json").read_text())
    validate_report(report)
    return report


def _damage(judgment: dict[str, Any], how: str) -> None:
    if how == "score":
        judgment["scores"]["C0"] = "ten"
    elif how == "range":
        judgment["scores"]["C0"] = 11
    elif how == "cost":
        judgment["cost_usd"] = "free"
    elif how == "labels":
        judgment["labels"] = [3]
    elif how == "predicates":
        judgment["predicates"] = ["yes"]
    elif how == "scores-list":
        judgment["scores"] = [10, 9]


@pytest.mark.parametrize("how", ["score", "range", "cost", "labels", "predicates",
                                 "scores-list"])
def test_a_stored_judgment_with_wrong_types_is_judged_again_with_a_warning(
        pytester: pytest.Pytester, how: str) -> None:
    _two_cases(pytester)
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)
    path = pytester.path / "reports/procedural/pixel/judgments/kitchen-pour-water-1.json"
    stored = json.loads(path.read_text())
    _damage(stored["judgment"], how)
    path.write_text(json.dumps(stored))

    again = pytester.runpytest(*ARGS)
    again.assert_outcomes(passed=2, warnings=1)
    again.stdout.fnmatch_lines([f"*StoredDataWarning: the stored judgment {path} cannot be "
                                f"trusted (*): judging kitchen-pour-water-1 again"])
    judged = {i["case_id"]: i["judged"] for i in _report(pytester)["items"]}
    assert judged == {"kitchen-pour-water-1": True, "kitchen-pour-water-2": False}
    assert json.loads(path.read_text())["judgment"]["scores"]["C0"] in range(11)

    third = pytester.runpytest(*ARGS)
    third.assert_outcomes(passed=2)  # trusted again: no warning, nothing judged
    assert not any(i["judged"] for i in _report(pytester)["items"])


def test_a_damaged_judgment_is_judged_again_under_xdist(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)
    path = pytester.path / "reports/procedural/pixel/judgments/kitchen-pour-water-2.json"
    stored = json.loads(path.read_text())
    _damage(stored["judgment"], "score")
    path.write_text(json.dumps(stored))
    again = pytester.runpytest_subprocess(*ARGS, "-n", "2")
    again.assert_outcomes(passed=2, warnings=1)
    assert "cannot be trusted" in again.stdout.str()


# ------------------------------------------------------------------ a PNG whose data is broken

def broken_png(size: int = 128) -> bytes:
    """A PNG whose every chunk CRC checks out but whose image data holds a third of the
    rows: Pillow's verify() passes it, decoding fails."""
    import io
    import struct
    import zlib

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (size, size), (120, 40, 200)).save(buffer, format="PNG")
    data = buffer.getvalue()
    chunks, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        chunks.append((data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]))
        pos += 12 + length
    rows = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    out, wrote = bytearray(data[:8]), False
    for kind, body in chunks:
        if kind == b"IDAT":
            if wrote:
                continue
            body, wrote = zlib.compress(rows[:len(rows) // 3]), True
        crc = struct.pack(">I", zlib.crc32(kind + body))
        out += struct.pack(">I", len(body)) + kind + body + crc
    return bytes(out)


def test_the_broken_png_passes_pillows_check_and_fails_decoding(tmp_path: Path) -> None:
    from PIL import Image

    path = tmp_path / "broken.png"
    path.write_bytes(broken_png())
    with Image.open(path) as opened:
        opened.verify()
    with Image.open(path) as opened, pytest.raises(OSError, match="truncated"):
        opened.load()


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_png_with_broken_image_data_is_an_item_error_naming_the_file(
        pytester: pytest.Pytester, workers: list[str]) -> None:
    _two_cases(pytester)
    sheets = pytester.mkdir("sheets")
    (sheets / "kitchen-pour-water-1.png").write_bytes(broken_png())
    from PIL import Image

    Image.new("RGB", (96, 96), (10, 10, 10)).save(sheets / "kitchen-pour-water-2.png")
    result = pytester.runpytest_subprocess("kitchen.yaml", "--imagetime-model=files:sheets",
                                           "--imagetime-pass-threshold=0", *workers)
    outcomes = result.parseoutcomes()
    assert outcomes["errors"] == 1 and outcomes.get("passed", 0) + outcomes.get("failed", 0) == 1
    reason = ("cannot decode the file *sheets/kitchen-pour-water-1.png for kitchen-pour-water-1: "
              "its image data is broken (image file is truncated*)")
    result.stdout.fnmatch_lines([f"ERROR kitchen.yaml::kitchen-pour-water-1[[]files:sheets[]] "
                                 f"- {reason}"])
    assert "Traceback" not in result.stdout.str() and "metrics.py" not in result.stdout.str()
    report = json.loads((pytester.path / "reports/files-sheets/pixel/report.json").read_text())
    validate_report(report)
    (error,) = report["errors"]
    assert error["reason"].startswith("cannot decode the file ")
    assert "sheets/kitchen-pour-water-1.png" in error["reason"]


# ------------------------------------------------------------------ one case id, two files

@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_same_case_id_in_two_case_files_is_a_collection_error_naming_both(
        pytester: pytest.Pytester, workers: list[str]) -> None:
    _two_cases(pytester)
    write_case_file(pytester.path / "more.yaml", [
        case_dict("kitchen-pour-water-9"),
        case_dict("kitchen-pour-water-2", setup={"scene": "a steel counter",
                                                 "style": "photorealistic",
                                                 "camera": "fixed side view"})])
    result = pytester.runpytest_subprocess("kitchen.yaml", "more.yaml",
                                           "--imagetime-model=procedural",
                                           "--imagetime-size=128", *workers)
    problem = ("more.yaml:*: case 'kitchen-pour-water-2': field 'id': this case id is also "
               "defined in kitchen.yaml:*; case ids must be unique across the case files of a "
               "run*")
    if workers:  # the controller stops before the first item, as pytest does serially
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: {problem}"])
    else:
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines([problem])
    assert "passed" not in result.stdout.str()
    assert not (pytester.path / "reports").exists()


def test_distinct_case_ids_across_files_collect_as_before(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    write_case_file(pytester.path / "more.yaml", [case_dict("kitchen-pour-water-9")])
    result = pytester.runpytest("kitchen.yaml", "more.yaml", "--imagetime-model=procedural",
                                "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    assert "3 tests collected" in result.stdout.str()


# ------------------------------------------------------------------ files left by a killed run

@pytest.fixture
def live_pid() -> Iterator[int]:
    """The pid of a process that runs for the length of the test."""
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


def _dead_pid() -> int:
    import subprocess
    import sys

    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_temporary_files_of_a_killed_run_are_removed_and_a_live_writers_kept(
        pytester: pytest.Pytester, live_pid: int) -> None:
    import os
    import time

    from pytest_imagetime.store.run_lock import host_name

    _two_cases(pytester)
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)
    images = pytester.path / "reports/procedural/images"
    judgments = pytester.path / "reports/procedural/pixel/judgments"
    here, dead = host_name(), _dead_pid()
    killed = [images / f".kitchen-pour-water-1.png.{here}.{dead}-0.tmp",
              judgments / f".kitchen-pour-water-1.json.{here}.{dead}-3.tmp",
              pytester.path / f"reports/.junit.xml.{here}.{dead}-7.tmp"]
    old_elsewhere = judgments / ".kitchen-pour-water-2.json.otherhost.42-0.tmp"
    old_unnamed = images / ".kitchen-pour-water-2.png.42-1.tmp"  # an earlier version's name
    live = [images / f".kitchen-pour-water-2.png.{here}.{live_pid}-0.tmp",
            judgments / ".kitchen-pour-water-2.json.otherhost.42-1.tmp",
            images / ".kitchen-pour-water-1.json.43-0.tmp"]
    for path in [*killed, old_elsewhere, old_unnamed, *live]:
        path.write_bytes(b"half a file")
    hours_ago = time.time() - 2 * 3600
    for path in (old_elsewhere, old_unnamed):
        os.utime(path, (hours_ago, hours_ago))

    pytester.runpytest(*ARGS).assert_outcomes(passed=2)
    assert not [p for p in [*killed, old_elsewhere, old_unnamed] if p.exists()]
    assert all(p.exists() for p in live)  # a writer that may still run is left alone


def test_the_temporary_name_carries_its_writer(tmp_path: Path) -> None:
    import os

    from pytest_imagetime.store.atomic import _temporary_file, remove_abandoned_temporaries
    from pytest_imagetime.store.run_lock import host_name

    fd, name = _temporary_file(tmp_path / "sheet.png")
    os.close(fd)
    assert Path(name).name.startswith(f".sheet.png.{host_name()}.{os.getpid()}-")
    assert remove_abandoned_temporaries([tmp_path]) == 0  # this process runs
    assert Path(name).exists()


# ------------------------------------------------------------------ two sessions, one folder

def _claim(pytester: pytest.Pytester, pid: int, host: str | None = None,
           **sheets: Any) -> Path:
    from pytest_imagetime.store.run_lock import CLAIMS, host_name

    host = host or host_name()
    settings = {"model": "procedural", "model_config_sha256": _procedural_config(),
                "setting": "prompt-only", "size": 128, "seed": 0, "grid": [2, 2], **sheets}
    folder = pytester.path / "reports" / "procedural" / CLAIMS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{host}-{pid}.json"
    path.write_text(json.dumps({"pid": pid, "host": host, "started": "2026-11-27T10:00:00+00:00",
                                "command": ["pytest"], "sheets": settings, "judges": {}}))
    return path


def _procedural_config() -> str:
    from pytest_imagetime.models.procedural import ProceduralModel
    from pytest_imagetime.store.keys import input_key

    return input_key(dict(ProceduralModel().config()))


def _own_claim(pytester: pytest.Pytester) -> dict[str, Any]:
    """What this plugin writes as its claim, read while a session runs."""
    pytester.makeconftest("""
        import json, pathlib

        def pytest_collection_finish(session):
            folder = pathlib.Path("reports/procedural/.imagetime-sessions")
            (claim,) = folder.glob("*.json")
            pathlib.Path("claim.json").write_text(claim.read_text())
    """)
    _two_cases(pytester)
    pytester.runpytest(*ARGS, "--collect-only")  # collecting writes nothing: no claim
    assert not (pytester.path / "claim.json").exists()
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)
    claim: dict[str, Any] = json.loads((pytester.path / "claim.json").read_text())
    return claim


def test_a_session_claims_its_folder_while_it_runs_and_releases_it(
        pytester: pytest.Pytester) -> None:
    import os

    claim = _own_claim(pytester)
    assert claim["pid"] == os.getpid()
    assert claim["sheets"]["seed"] == 0 and claim["sheets"]["size"] == 128
    assert set(claim["judges"]) == {"pixel"}
    assert not (pytester.path / "reports/procedural/.imagetime-sessions").exists()


@pytest.mark.parametrize(("theirs", "clash"), [({"seed": 7}, "seed 7 there, 0 here"),
                                               ({"size": 512}, "size 512 there, 128 here")])
def test_a_live_session_with_other_settings_is_refused_naming_its_holder(
        pytester: pytest.Pytester, live_pid: int, theirs: dict[str, Any], clash: str) -> None:
    from pytest_imagetime.store.run_lock import host_name

    _two_cases(pytester)
    held = _claim(pytester, live_pid, **theirs)
    result = pytester.runpytest_subprocess(*ARGS, "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"ERROR: --imagetime-out=*reports: another session writes *reports/procedural with "
        f"other settings ({clash}*): pid {live_pid} on host {host_name()} since "
        f"2026-11-27T10:00:00+00:00. Wait for it to end, give this run another "
        f"--imagetime-out, or, if that session no longer runs, delete {held}"])
    assert not (pytester.path / "reports/procedural/images").exists()  # nothing drawn
    assert held.exists()


def test_a_session_from_another_host_is_trusted_until_its_claim_is_deleted(
        pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    held = _claim(pytester, 42, host="elsewhere", seed=7)
    refused = pytester.runpytest(*ARGS)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    held.unlink()
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)


def test_a_stale_claim_is_removed_and_the_run_goes_on(pytester: pytest.Pytester) -> None:
    _two_cases(pytester)
    held = _claim(pytester, _dead_pid(), seed=7)
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)
    assert not held.exists()


def test_a_live_session_with_the_same_settings_shares_the_folder(
        pytester: pytest.Pytester, live_pid: int) -> None:
    claim = _own_claim(pytester)
    pytester.path.joinpath("conftest.py").unlink()
    assert claim["sheets"]["model_config_sha256"] == _procedural_config()
    held = _claim(pytester, live_pid, **claim["sheets"])
    pytester.runpytest(*ARGS).assert_outcomes(passed=2)
    assert held.exists()  # another session's claim is never touched


def test_two_real_sessions_with_other_seeds_cannot_write_one_folder_at_once(
        pytester: pytest.Pytester) -> None:
    import subprocess
    import sys
    import time

    _two_cases(pytester)
    # The first session waits, once its items are collected, until the test lets it go.
    pytester.makeconftest("""
        import os, pathlib, time

        def pytest_collection_finish(session):
            if os.environ.get("HOLD") != "1":
                return
            pathlib.Path("holding").write_text(str(os.getpid()))
            for _ in range(600):
                if pathlib.Path("go").exists():
                    return
                time.sleep(0.1)
    """)
    env = {**__import__("os").environ, "HOLD": "1"}
    first = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *ARGS,
                              "--imagetime-judge=pixel", "--imagetime-seed=1"],
                             cwd=pytester.path, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(600):
            if (pytester.path / "holding").exists() or first.poll() is not None:
                break
            time.sleep(0.1)
        holder = int((pytester.path / "holding").read_text())
        second = pytester.runpytest_subprocess(*ARGS, "--imagetime-seed=2")
        assert second.ret == pytest.ExitCode.USAGE_ERROR
        assert f"(seed 1 there, 2 here): pid {holder} on host" in second.stderr.str()
    finally:
        (pytester.path / "go").write_text("")
        output, _ = first.communicate(timeout=300)
    assert first.returncode == 0, output
    pytester.runpytest(*ARGS, "--imagetime-seed=2").assert_outcomes(passed=2)


def test_process_alive_tells_a_running_process_from_a_finished_one(live_pid: int) -> None:
    import os

    from pytest_imagetime.store.run_lock import process_alive

    assert process_alive(os.getpid()) and process_alive(live_pid)
    assert not process_alive(_dead_pid())
    assert not process_alive(0) and not process_alive(-1)


def test_claims_clash_on_sheet_settings_and_on_one_judge_folder_only() -> None:
    from pytest_imagetime.store.run_lock import differences

    sheets: dict[str, Any] = {"seed": 0, "size": 128, "model_config_sha256": "a"}
    base: dict[str, Any] = {"sheets": sheets, "judges": {"pixel": "p1", "vlm": "v1"}}
    assert differences(base, base) == []
    other_judge = {**base, "judges": {"vlm-chain": "c1"}}  # other judges share the sheets
    assert differences(base, other_judge) == []
    assert differences(base, {**base, "judges": {"vlm": "v2"}}) == [
        "the judge 'vlm' is configured otherwise"]
    assert differences(base, {**base, "sheets": {**sheets, "seed": 3}}) == [
        "seed 3 there, 0 here"]
    assert differences(base, {**base, "sheets": {**sheets, "model_config_sha256": "b"}}) == [
        "another model config"]


@settings(max_examples=60, deadline=None)
@given(name=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,40}", fullmatch=True))
def test_every_temporary_name_parses_back_to_its_writer(
        tmp_path_factory: pytest.TempPathFactory, name: str) -> None:
    """Whatever the target's name (dots, digits, dashes), the cleanup reads this process's
    host and pid back from its temporary file: never another writer's."""
    import os

    from pytest_imagetime.store.atomic import _TEMPORARY, _temporary_file
    from pytest_imagetime.store.run_lock import host_name

    folder = tmp_path_factory.mktemp("names")
    fd, tmp = _temporary_file(folder / name)
    os.close(fd)
    found = _TEMPORARY.match(Path(tmp).name)
    assert found is not None
    assert (found["host"], int(found["pid"])) == (host_name(), os.getpid())
