"""``acg.cpu``: what PyTorch programs ask about the CPU device, and ``acg.cpu.amp``.

>>> import autograd_compile as acg
>>> acg.cpu.is_available(), acg.cpu.device_count(), acg.cpu.current_device()
(True, 1, 'cpu')
"""
from __future__ import annotations

from typing import Any


def is_available() -> bool:
    """Always True (JAX always has its CPU device)."""
    return True


def device_count() -> int:
    """1, as PyTorch's torch.cpu.device_count()."""
    return 1


def current_device() -> str:
    """'cpu', as PyTorch's torch.cpu.current_device()."""
    return "cpu"


def synchronize(device: Any = None) -> None:
    """Wait for pending CPU work (JAX: block on every live CPU array)."""
    import jax
    for a in jax.live_arrays():
        if any(d.platform == "cpu" for d in a.devices()):
            a.block_until_ready()


__all__ = ["is_available", "device_count", "current_device", "synchronize"]
