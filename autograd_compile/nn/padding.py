"""Padding layers: constant, zero, reflection, replication and circular, in 1-3 dims, each a
module over ``F.pad``.

>>> import autograd_compile as acg
>>> acg.nn.ReflectionPad1d(2)(acg.tensor([[[1.0, 2.0, 3.0]]])).tolist()
[[[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]]
"""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = [f"{kind}Pad{n}d" for kind in ("Constant", "Zero", "Reflection", "Replication",
                                         "Circular") for n in (1, 2, 3)]


def _amounts(padding: Any, n: int) -> tuple:
    """An int pads every side of the last n dims; otherwise 2n amounts, last dim first."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    pads = tuple(int(p) for p in padding)
    if len(pads) != 2 * n:
        raise ValueError(f"expected a padding of {2 * n} values (or an int), got {padding}")
    return pads


class _PadNd(Module):
    """``F.pad(input, padding, mode)`` with padding normalised to 2n amounts."""

    _n = 0
    _mode = "constant"

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _amounts(padding, self._n)

    def _check(self, input: Tensor) -> None:
        n = self._n
        if input.ndim not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.ndim}D input)")

    def forward(self, input: Tensor) -> Tensor:
        self._check(input)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    """Pads with a constant ``value``."""

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with ``value``."""

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with ``value``."""

    _n = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pads the last dim with zeros."""

    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pads the last 2 dims with zeros."""

    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pads the last 3 dims with zeros."""

    _n = 3


class ReflectionPad1d(_PadNd):
    """Pads the last dim with its reflection (edge excluded)."""

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dims with their reflection."""

    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dims with their reflection."""

    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last dim by repeating its edge values."""

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dims by repeating their edge values."""

    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dims by repeating their edge values."""

    _n, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Pads the last dim periodically (wrap-around)."""

    _n, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Pads the last 2 dims periodically."""

    _n, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Pads the last 3 dims periodically."""

    _n, _mode = 3, "circular"
