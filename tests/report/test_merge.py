"""``imagetime merge`` refusing parts that are not shard reports, before anything is written.
(Whole merges of real shards: tests/plugin/test_shards.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_imagetime.report.merge import MUST_AGREE, MergeError, merge


def _part(root: Path, name: str, text: str) -> Path:
    run = root / name / "procedural" / "pixel"
    run.mkdir(parents=True)
    (run / "report.json").write_text(text)
    return root / name


def test_a_part_without_reports_says_where_they_are_expected(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(MergeError, match=r"empty: no run directories with a report.json "
                                         r"\(expected PART/<model>/<judge>/report.json\)"):
        merge([tmp_path / "empty"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("text", "message"), [
    ("{broken", "not a readable report"),
    ("[1, 2]", "not a readable report"),
    ('{"items": []}', "written before reports said which cases they cover"),
    ('{"items": [], "coverage": {}}', "not a valid ImageTime report: "),
])
def test_a_part_that_is_not_a_report_is_named(tmp_path: Path, text: str, message: str) -> None:
    part = _part(tmp_path, "shard-1", text)
    with pytest.raises(MergeError) as raised:
        merge([part], tmp_path / "out")
    report = part / "procedural" / "pixel" / "report.json"
    assert str(raised.value).startswith(f"{report}: {message}")
    assert not (tmp_path / "out").exists()


def test_what_shards_must_agree_on() -> None:
    assert set(MUST_AGREE) == {"model", "judge", "setting", "size", "seed", "pass_threshold",
                               "rubric_version"}
