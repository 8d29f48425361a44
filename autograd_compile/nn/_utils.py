"""Small helpers shared by the layer files: argument normalisation and parameter creation."""
from __future__ import annotations

from typing import Any

from ..kernels import api as A
from ..tensor import Tensor
from .parameter import Parameter


def ntuple(value: Any, n: int) -> tuple:
    """``3`` -> ``(3, 3)``; tuples and strings pass through (PyTorch's ``_pair``)."""
    if isinstance(value, str):
        return value  # type: ignore[return-value]
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,) * n


def empty_param(*shape: int, dtype: Any = None, device: Any = None,
                requires_grad: bool = True) -> Parameter:
    """A Parameter of ``shape`` (zeros until an initialiser fills it)."""
    t: Tensor = A.zeros(*shape, dtype=dtype)
    if device is not None:
        t = t.to(device)
    return Parameter(t, requires_grad=requires_grad)
