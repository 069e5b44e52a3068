"""``--imagetime-devices``: parsing, and one device per xdist worker, round robin."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_imagetime.models.devices import (
    DeviceError,
    assign_device,
    parse_devices,
    worker_index,
)


@pytest.mark.parametrize(("text", "devices"), [
    ("auto", None), ("", None), ("  auto ", None),
    ("cpu", ("cpu",)), ("mps", ("mps",)), ("cuda", ("cuda",)),
    ("0,1", ("cuda:0", "cuda:1")), (" 0 , 03 ", ("cuda:0", "cuda:3")),
    ("cuda:2,cpu", ("cuda:2", "cpu")),
])
def test_devices_parse(text: str, devices: tuple[str, ...] | None) -> None:
    assert parse_devices(text) == devices


@pytest.mark.parametrize("text", ["gpu", "cuda:", "cuda:x", "0,,1", "-1", "tpu:0"])
def test_a_bad_device_is_named_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(DeviceError, match=r"is not a device; use auto, cpu, mps, or GPU numbers"):
        parse_devices(text)


@pytest.mark.parametrize(("name", "index"), [(None, 0), ("gw0", 0), ("gw7", 7), ("gw", 0),
                                             ("master", 0), ("gwx", 0)])
def test_worker_index(monkeypatch: pytest.MonkeyPatch, name: str | None, index: int) -> None:
    if name is None:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    else:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", name)
    assert worker_index() == index


@given(st.lists(st.sampled_from(["cpu", "cuda:0", "cuda:1", "mps"]), min_size=1, max_size=4),
       st.integers(0, 64))
def test_given_devices_are_assigned_round_robin(devices: list[str], index: int) -> None:
    chosen = assign_device(tuple(devices), index)
    assert chosen == devices[index % len(devices)]
    assert assign_device(tuple(devices), index + len(devices)) == chosen


@given(st.integers(1, 8), st.integers(0, 64))
def test_auto_spreads_workers_over_the_gpus(count: int, index: int) -> None:
    assert assign_device(None, index, cuda_count=count) == f"cuda:{index % count}"


def test_auto_without_a_gpu_leaves_the_backend_default() -> None:
    assert assign_device(None, 3, cuda_count=0) is None
