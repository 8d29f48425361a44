"""``acg.accelerator``: PyTorch's device-neutral questions (``torch.accelerator``), answered
from JAX's devices: the accelerator is the GPU when JAX sees one, otherwise there is none.

>>> import autograd_compile as acg
>>> acg.accelerator.is_available() == acg.cuda.is_available()
True
"""
from __future__ import annotations

from typing import Any

from . import cuda
from .model import device


def is_available() -> bool:
    """True when JAX sees an accelerator (a GPU)."""
    return cuda.is_available()


def current_accelerator(check_available: bool = False) -> device | None:
    """``device("cuda")`` when there is a GPU; None otherwise (as PyTorch on a CPU-only host)."""
    return device("cuda") if is_available() else None


def device_count() -> int:
    return cuda.device_count()


def current_device_index() -> int:
    return cuda.current_device() if is_available() else -1


def synchronize(device: Any = None) -> None:
    """Wait for the accelerator's pending work."""
    if is_available():
        cuda.synchronize(device)


__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "synchronize"]
