from __future__ import annotations

import pytest

from pytest_imagetime.cases import Case
from tests.builders import make_case


@pytest.fixture
def case() -> Case:
    return make_case()
