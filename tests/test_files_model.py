from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.cases import Case
from pytest_imagetime.models.base import GenerationRequest, ModelError
from pytest_imagetime.models.files import FilesModel


def _request(case: Case) -> GenerationRequest:
    return GenerationRequest(case=case, setting="prompt-only", size=64, seed=1)


def test_reads_any_supported_suffix(tmp_path: Path, case: Case) -> None:
    Image.new("RGBA", (32, 32), (9, 9, 9, 255)).save(tmp_path / f"{case.id}.webp")
    model = FilesModel(str(tmp_path))
    generated = model.generate(request=_request(case))
    assert generated.image.mode == "RGB" and generated.image.size == (32, 32)
    assert generated.details["source"].endswith(".webp")
    assert model.name == f"files:{tmp_path}"


def test_missing_image_names_the_expected_path(tmp_path: Path, case: Case) -> None:
    with pytest.raises(ModelError, match=rf"expected {tmp_path}/{case.id}\.png"):
        FilesModel(str(tmp_path)).generate(request=_request(case))


def test_unreadable_image_is_a_model_error(tmp_path: Path, case: Case) -> None:
    (tmp_path / f"{case.id}.png").write_bytes(b"not a png")
    with pytest.raises(ModelError, match="cannot read"):
        FilesModel(str(tmp_path)).generate(request=_request(case))


def test_needs_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a directory"):
        FilesModel(None)
    with pytest.raises(ValueError, match="is not a directory"):
        FilesModel(str(tmp_path / "missing"))


def test_input_token_changes_when_the_file_changes(tmp_path: Path, case: Case) -> None:
    path = tmp_path / f"{case.id}.png"
    Image.new("RGB", (8, 8)).save(path)
    model = FilesModel(str(tmp_path))
    before = model.input_token(_request(case))
    Image.new("RGB", (9, 9), (200, 0, 0)).save(path)
    assert model.input_token(_request(case)) != before
