"""``acg.cpu.amp`` (PyTorch's ``torch.cpu.amp``): autocast for "cpu" (bfloat16 by default).

>>> import autograd_compile as acg
>>> with acg.cpu.amp.autocast():
...     y = acg.ones(2, 2) @ acg.ones(2, 2)
>>> str(y.dtype)
'torch.bfloat16'
"""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from . import autocast_mode
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler"]


class autocast(autocast_mode.autocast):  # noqa: N801
    """``acg.autocast("cpu", ...)`` with torch.cpu.amp's argument order and defaults."""

    def __init__(self, enabled: bool = True, dtype: Any = jnp.bfloat16,
                 cache_enabled: bool = True) -> None:
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``acg.amp.GradScaler("cpu", ...)`` with torch.cpu.amp's signature."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
