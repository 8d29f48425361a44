"""``make_tensor``: random test inputs drawn as PyTorch's ``torch.testing.make_tensor`` draws them.

Values are uniform in ``[low, high)``; the defaults per dtype are PyTorch's (bool ``[0, 2)``,
unsigned ``[0, 10)``, signed ``[-9, 10)``, floating and complex ``[-9, 9)``), and given bounds are
clamped to what the dtype can represent, with PyTorch's errors for empty or NaN ranges.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Sequence

import autograd_compile as acg
from ..tensor import Tensor

__all__ = ["make_tensor"]

_INTEGRAL = ("uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
_FLOATING = ("float16", "bfloat16", "float32", "float64")
_COMPLEX = ("complex64", "complex128")
_FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


def _kind(dtype: Any) -> str:
    """'bool', 'int', 'float', 'complex' or 'float8'; TypeError for any other dtype."""
    for kind, names in (("bool", ("bool",)), ("int", _INTEGRAL), ("float", _FLOATING),
                        ("complex", _COMPLEX), ("float8", _FLOAT8)):
        if any(getattr(acg, n, None) == dtype for n in names):
            return kind
    raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                    "torch.testing.make_tensor(). To request support, file an issue at: "
                    "https://github.com/pytorch/pytorch/issues")


def _bounds(kind: str, dtype: Any) -> tuple[float, float, float, float]:
    """(lowest inclusive, highest exclusive, default low, default high) of ``dtype``."""
    if kind == "bool":
        return 0, 2, 0, 2
    if kind == "int":
        info = acg.iinfo(dtype)  # randint's bound is an int64: 2**63 - 1 cannot be drawn
        return info.min, info.max + (0 if dtype == acg.int64 else 1), -9, 10
    info = acg.finfo(dtype)
    return info.min, info.max, -9, 9


def _range(low: float | None, high: float | None, kind: str, dtype: Any
           ) -> tuple[float, float]:
    lowest, highest, default_low, default_high = _bounds(kind, dtype)
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and kind in ("float", "complex"):
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if kind in ("bool", "int"):  # ceil both: randint's upper bound is exclusive
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform(shape: tuple, dtype: Any, device: Any, low: float, high: float) -> Tensor:
    t = acg.empty(shape, dtype=dtype, device=device)
    if high - low >= acg.finfo(dtype).max:  # the span would overflow: draw half, then double
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def _draw(shape: tuple, kind: str, dtype: Any, device: Any, low: float, high: float) -> Tensor:
    if kind == "bool":  # randint draws integers; the bool is their cast
        return acg.randint(low, high, shape, device=device, dtype=acg.int64).to(acg.bool)
    if kind == "int":
        return acg.randint(low, high, shape, device=device, dtype=dtype)
    if kind == "complex":  # real and imaginary parts each uniform, as PyTorch's view_as_real
        real = acg.float32 if dtype == acg.complex64 else acg.float64
        return acg.view_as_complex(_uniform((*shape, 2), real, device, low, high))
    if kind == "float8":
        return _uniform(shape, acg.float32, device, low, high).to(dtype)
    return _uniform(shape, dtype, device, low, high)


def make_tensor(*shape: int | Sequence[int], dtype: Any, device: Any, low: float | None = None,
                high: float | None = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format: Any = None) -> Tensor:
    """A tensor of ``shape`` with values uniform in ``[low, high)``, as PyTorch's.

    ``low``/``high`` default per dtype (bool ``[0, 2)``, unsigned ``[0, 10)``, signed integers
    ``[-9, 10)``, floating and complex ``[-9, 9)``) and are clamped to the dtype's finite range.
    ``exclude_zero`` replaces zeros by 1 (bool, integers) or the dtype's ``finfo.tiny``;
    ``noncontiguous`` returns a strided view (of a tensor twice as wide in the last dimension);
    ``requires_grad`` only for floating and complex dtypes.

    >>> import autograd_compile as acg
    >>> t = make_tensor(2, 3, dtype=acg.int64, device="cpu", low=0, high=4)
    >>> t.shape, t.dtype, bool(((t >= 0) & (t < 4)).all())
    (acg.Size([2, 3]), torch.int64, True)
    """
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    kind = _kind(dtype)
    if requires_grad and kind in ("bool", "int"):
        raise ValueError("`requires_grad=True` is not supported for boolean and integral dtypes, "
                         f"but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # twice as wide, so the view skips real values
        shape = (*shape[:-1], 2 * shape[-1])
    low, high = _range(low, high, kind, dtype)
    result = _draw(shape, kind, dtype, device, low, high)
    if noncontiguous:
        result = result[..., 1::2]  # offset by one: catches offset bugs too
    elif memory_format is not None:
        result = result.contiguous(memory_format=memory_format).clone()
    if exclude_zero:
        result[result == 0] = 1 if kind in ("bool", "int") else acg.finfo(dtype).tiny
    if kind in ("float", "complex"):
        result.requires_grad = requires_grad
    return result
