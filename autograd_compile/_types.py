"""Type helpers PyTorch programs reach for: ``Size``, ``finfo``, ``iinfo``.

>>> import autograd_compile as acg
>>> acg.Size([2, 3]).numel(), acg.finfo(acg.float32).eps == 2.0 ** -23, acg.iinfo(acg.int8).max
(6, True, 127)
"""
from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp


class Size(tuple):
    """A shape: a tuple of ints (``torch.Size``), equal to the plain tuple."""

    def numel(self) -> int:
        return math.prod(self)

    def __repr__(self) -> str:
        return f"acg.Size({list(self)})"


class finfo:  # noqa: N801  (PyTorch's name)
    """Machine limits of a floating dtype as Python numbers (``bits eps max min tiny
    smallest_normal resolution``); the default dtype's when none is given."""

    def __init__(self, dtype: Any = None) -> None:
        from .kernels._dtypes import default_float
        info = jnp.finfo(default_float() if dtype is None else dtype)
        self.dtype, self.bits = str(info.dtype), int(info.bits)
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = float(info.resolution)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min}, max={self.max}, "
                f"eps={self.eps}, smallest_normal={self.tiny}, dtype={self.dtype})")


class iinfo:  # noqa: N801
    """Limits of an integer dtype as Python ints (``bits min max``)."""

    def __init__(self, dtype: Any) -> None:
        info = jnp.iinfo(dtype)
        self.dtype, self.bits = str(info.dtype), int(info.bits)
        self.min, self.max = int(info.min), int(info.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"


__all__ = ["Size", "finfo", "iinfo"]
