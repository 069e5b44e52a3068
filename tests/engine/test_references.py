"""Scaffold references: read from a folder by case id, or drawn once per case by a model and
reused by every later request; failures are ReferenceErrors naming the case."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from PIL import Image

from pytest_imagetime.cases.model import Case
from pytest_imagetime.engine.references import (
    IMAGE_SUFFIXES,
    GeneratedReferences,
    ReferenceDir,
    ReferenceError,
)
from pytest_imagetime.models.base import Generated, GenerationRequest, ModelError
from pytest_imagetime.models.procedural import ProceduralModel


@pytest.mark.parametrize("suffix", IMAGE_SUFFIXES)
def test_a_folder_reference_is_found_by_any_suffix(tmp_path: Path, case: Case,
                                                   suffix: str) -> None:
    path = tmp_path / f"{case.id}{suffix}"
    Image.new("RGBA", (10, 10), (0, 0, 255, 128)).convert(
        "RGB" if suffix in (".jpg", ".jpeg") else "RGBA").save(path)
    found = ReferenceDir(tmp_path).get(case)
    assert found.image.mode == "RGB" and found.image.size == (10, 10)
    assert found.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert found.source == str(path)


def test_png_is_preferred_over_the_other_suffixes(tmp_path: Path, case: Case) -> None:
    Image.new("RGB", (4, 4)).save(tmp_path / f"{case.id}.jpg")
    Image.new("RGB", (6, 6)).save(tmp_path / f"{case.id}.png")
    assert ReferenceDir(tmp_path).get(case).image.size == (6, 6)


def test_a_missing_reference_says_where_it_was_expected(tmp_path: Path, case: Case) -> None:
    with pytest.raises(ReferenceError) as raised:
        ReferenceDir(tmp_path).get(case)
    assert str(raised.value) == (
        f"no reference image for case {case.id!r}: expected {tmp_path / (case.id + '.png')} "
        "(or .jpg, .jpeg, .webp) for --imagetime-reference-dir")
    assert ReferenceDir(tmp_path).describe() == {"source": "directory",
                                                 "directory": str(tmp_path)}


class _Counting(ProceduralModel):
    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.requests: list[GenerationRequest] = []
        self.fail = fail

    def generate(self, *, request: GenerationRequest) -> Generated:
        self.requests.append(request)
        if self.fail:
            raise ModelError("no GPU")
        return super().generate(request=request)


def test_a_drawn_reference_is_stored_once_and_reused(tmp_path: Path, case: Case) -> None:
    model = _Counting()
    refs = GeneratedReferences(model, tmp_path, 64, lambda case_id: 11)
    first = refs.get(case)
    (request,) = model.requests
    assert (request.kind, request.seed, request.size) == ("reference", 11, 64)
    assert refs.paths.image(case.id).is_file()
    again = GeneratedReferences(_Counting(), tmp_path, 64, lambda case_id: 11)
    second = again.get(case)
    assert second.sha256 == first.sha256 and second.source == first.source
    assert refs.describe()["directory"] == str(tmp_path / "_references" / model.name)


def test_another_seed_or_size_draws_again(tmp_path: Path, case: Case) -> None:
    GeneratedReferences(_Counting(), tmp_path, 64, lambda case_id: 1).get(case)
    model = _Counting()
    GeneratedReferences(model, tmp_path, 64, lambda case_id: 2).get(case)
    GeneratedReferences(model, tmp_path, 96, lambda case_id: 2).get(case)
    assert len(model.requests) == 2


def test_a_failing_reference_model_names_the_case(tmp_path: Path, case: Case) -> None:
    with pytest.raises(ReferenceError, match=f"^the reference model procedural failed on "
                                             f"{case.id}: no GPU$"):
        GeneratedReferences(_Counting(fail=True), tmp_path, 64, lambda case_id: 1).get(case)
