"""What older PyTorch programs lean on: ``acg.dtype`` and the legacy tensor types.

>>> import autograd_compile as acg
>>> isinstance(acg.float32, acg.dtype), isinstance(acg.zeros(2).dtype, acg.dtype)
(True, True)
>>> acg.FloatTensor(2, 3).shape, acg.LongTensor([1, 2]).dtype
(acg.Size([2, 3]), torch.int64)
>>> isinstance(acg.zeros(2), acg.FloatTensor), isinstance(acg.zeros(2), acg.LongTensor)
(True, False)
"""
from __future__ import annotations

import numbers
from typing import Any

import jax.numpy as jnp
import numpy as np

from ._dtype import dtype, of
from .tensor import LEGACY_NEW, Tensor


class tensortype(type):  # noqa: N801  (PyTorch's metaclass name)
    """The metaclass of the legacy types: ``isinstance(t, acg.FloatTensor)`` checks the dtype."""

    _dtype: Any

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, Tensor) and np.dtype(obj.dtype) == cls._dtype

    def __repr__(cls) -> str:
        return f"<class 'autograd_compile.{cls.__name__}'>"

    @property
    def dtype(cls) -> Any:
        return of(cls._dtype)

    @property
    def is_cuda(cls) -> bool:
        return False


class _LegacyTensor(metaclass=tensortype):
    """``FloatTensor(2, 3)`` (zeros of that size; PyTorch leaves them uninitialised),
    ``FloatTensor([1, 2])`` (from data), ``FloatTensor(t)`` (t converted) or
    ``FloatTensor()`` (empty)."""

    _dtype: Any = np.dtype("float32")

    def __new__(cls, *args: Any, device: Any = None) -> Tensor:  # type: ignore[misc]
        return _construct(cls._dtype, args, device)


def _tensor_new(args: tuple, device: Any) -> Tensor:
    """``acg.Tensor(*args)``: PyTorch's legacy constructor of the default dtype; a tensor
    argument keeps its dtype (``torch.Tensor(t)`` aliases ``t``)."""
    from .kernels import api as A
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].detach()
    if len(args) == 1 and isinstance(args[0], numbers.Number) and \
            not isinstance(args[0], numbers.Integral):
        raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
    if len(args) == 1 and isinstance(args[0], str):
        raise TypeError("new(): invalid data type 'str'")
    return _construct(A.get_default_dtype(), args, device)


def _construct(dt: Any, args: tuple, device: Any) -> Tensor:
    """Zeros of a size (ints or a Size; PyTorch leaves them uninitialised), a tensor of
    data converted to ``dt``, or an empty tensor."""
    from .kernels import api as A
    if not args:
        return A.zeros(0, dtype=dt, device=device)
    if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args) or \
            (len(args) == 1 and type(args[0]).__name__ == "Size"):
        return A.zeros(*args, dtype=dt, device=device)
    if len(args) != 1:
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"{tuple(type(a).__name__ for a in args)}")
    data = args[0]
    if isinstance(data, Tensor):
        return data.detach().to(dt)
    return A.tensor(data, dtype=dt, device=device)


def _legacy(name: str, dt: str) -> type:
    return tensortype(name, (_LegacyTensor,), {"_dtype": np.dtype(dt), "__doc__":
                                               f"Legacy constructor of {dt} tensors."})


FloatTensor = _legacy("FloatTensor", "float32")
DoubleTensor = _legacy("DoubleTensor", "float64")
HalfTensor = _legacy("HalfTensor", "float16")
BFloat16Tensor = _legacy("BFloat16Tensor", jnp.bfloat16)
ByteTensor = _legacy("ByteTensor", "uint8")
CharTensor = _legacy("CharTensor", "int8")
ShortTensor = _legacy("ShortTensor", "int16")
IntTensor = _legacy("IntTensor", "int32")
LongTensor = _legacy("LongTensor", "int64")
BoolTensor = _legacy("BoolTensor", "bool")

LEGACY_NEW.append(_tensor_new)

__all__ = ["dtype", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
           "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"]
