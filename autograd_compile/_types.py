"""Type helpers PyTorch programs reach for: ``Size``, ``finfo``, ``iinfo``.

>>> import autograd_compile as acg
>>> acg.Size([2, 3]).numel(), acg.finfo(acg.float32).eps == 2.0 ** -23, acg.iinfo(acg.int8).max
(6, True, 127)
"""
from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp


class Size(tuple):
    """A shape: a tuple of ints (``torch.Size``), equal to and hashed as the plain tuple.

    ``Tensor.shape`` and ``Tensor.size()`` return one; as in PyTorch, slicing, ``+`` and
    ``*`` keep the type (``x.shape[1:].numel()``), and an op given one reads a tuple.

    >>> import autograd_compile as acg
    >>> s = acg.zeros(2, 3, 4).shape
    >>> s, s[1:].numel(), (1,) + s
    (acg.Size([2, 3, 4]), 12, acg.Size([1, 2, 3, 4]))
    """

    __slots__ = ()

    def numel(self) -> int:
        return math.prod(self)

    def __getitem__(self, index: Any) -> Any:
        got = tuple.__getitem__(self, index)
        return Size(got) if type(index) is slice else got

    def __add__(self, other: Any) -> Any:
        got = tuple.__add__(self, other)
        return got if got is NotImplemented else Size(got)

    def __radd__(self, other: Any) -> Any:
        return Size(tuple(other) + tuple(self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, n: Any) -> Any:
        got = tuple.__mul__(self, n)
        return got if got is NotImplemented else Size(got)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"acg.Size({list(self)})"


# JAX flattens a Size as the tuple it is (an unregistered tuple subclass would be a leaf)
jax.tree_util.register_pytree_node(Size, lambda s: (tuple(s), None), lambda _, c: Size(c))


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
