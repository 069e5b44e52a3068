"""Which accelerator this pytest process uses (``--imagetime-devices``).

Under ``-n N`` each xdist worker takes one device, round robin, so N workers on N GPUs never
share one. Device numbers are those torch sees, so an outer ``CUDA_VISIBLE_DEVICES`` still
decides which physical GPUs take part.
"""

from __future__ import annotations

import os


class DeviceError(ValueError):
    pass


def parse_devices(text: str) -> tuple[str, ...] | None:
    """``auto`` -> None (decided at run time); ``cpu``; ``0,1`` or ``cuda:0,cuda:1``; ``mps``."""
    text = text.strip()
    if text in ("", "auto"):
        return None
    devices: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if part.isdigit():
            devices.append(f"cuda:{int(part)}")
        elif part in ("cpu", "mps", "cuda") or (part.startswith("cuda:")
                                                 and part[5:].isdigit()):
            devices.append(part)
        else:
            raise DeviceError(f"{part!r} is not a device; use auto, cpu, mps, or GPU numbers "
                              f"such as 0,1 (or cuda:0,cuda:1)")
    return tuple(devices)


def worker_index() -> int:
    """0 outside xdist; N for worker ``gwN``."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def assign_device(devices: tuple[str, ...] | None, index: int,
                  cuda_count: int | None = None) -> str | None:
    """This process's device. ``None`` (auto): GPU ``index % count`` when CUDA is there, else
    None (the backend's default, the CPU)."""
    if devices is not None:
        return devices[index % len(devices)]
    count = _cuda_count() if cuda_count is None else cuda_count
    return f"cuda:{index % count}" if count else None


def _cuda_count() -> int:
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
