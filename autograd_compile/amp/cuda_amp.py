"""``acg.cuda.amp`` (PyTorch's ``torch.cuda.amp``): autocast and GradScaler for "cuda".

``from autograd_compile.cuda.amp import autocast, GradScaler`` works as with torch. Without a
GPU both warn and disable themselves (as PyTorch's do).

>>> import warnings
>>> import autograd_compile as acg
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     scaler = acg.cuda.amp.GradScaler(enabled=False)
>>> scaler.is_enabled(), scaler.get_scale()
(False, 1.0)
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import jax.numpy as jnp

from . import autocast_mode
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(autocast_mode.autocast):  # noqa: N801
    """``acg.autocast("cuda", ...)`` with torch.cuda.amp's argument order and defaults."""

    def __init__(self, enabled: bool = True, dtype: Any = jnp.float16,
                 cache_enabled: bool = True) -> None:
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``acg.amp.GradScaler("cuda", ...)`` with torch.cuda.amp's signature."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd: Callable | None = None, *, cast_inputs: Any = None) -> Callable:
    """``acg.amp.custom_fwd(device_type="cuda")``."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable) -> Callable:
    """``acg.amp.custom_bwd(device_type="cuda")``."""
    return autocast_mode.custom_bwd(bwd, device_type="cuda")
