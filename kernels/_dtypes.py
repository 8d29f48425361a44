"""Dtypes and PyTorch's type promotion (not JAX's), used by every kernel and shape rule.

PyTorch promotes in three tiers: dimensioned tensors outrank zero-dim tensors, which
outrank Python scalars; a lower tier only matters when its *category* (bool < int <
float < complex) is higher. So ``int64_tensor * 2.5`` is float32 (the default float),
``float16_tensor * float64_scalar_tensor`` stays float16.

>>> import jax.numpy as jnp
>>> result_type(jnp.zeros(3, jnp.int64), 2.5), result_type(jnp.zeros(3, jnp.float16), 1.0)
(dtype('float32'), dtype('float16'))
"""
from __future__ import annotations

import builtins
from typing import Any

import jax.numpy as _jnp  # dtype logic: always jax's rules

from ._xp import jnp  # values: numpy's while the host tier runs a kernel
import numpy as np

from autograd_compile.tracing.symbolic_shapes import SymBool, SymFloat, SymInt

FLOAT32 = np.dtype("float32")  # the floor statistics are computed in (layer_norm, softmax...)
DEFAULT_INT = np.dtype("int64")
BOOL = np.dtype("bool")
_DEFAULT_FLOAT = [FLOAT32]  # acg.set_default_dtype changes it (a list: one shared cell)


def default_float() -> np.dtype:
    """The dtype Python floats and float factories get (``acg.get_default_dtype()``)."""
    return _DEFAULT_FLOAT[0]


def set_default_float(dtype: Any) -> None:
    d = as_dtype(dtype)
    if d is None or category(d) != 2:
        raise TypeError(f"only floating-point types are supported as the default type, got "
                        f"{dtype}")
    _DEFAULT_FLOAT[0] = d


_AS_DTYPE: dict[Any, np.dtype] = {}  # what each spelling of a dtype means (a pure function)


def as_dtype(dtype: Any) -> np.dtype | None:
    """Canonical ``np.dtype`` (jnp scalar types, strings and dtypes all accepted)."""
    if dtype is None:
        return None
    try:
        return _AS_DTYPE[dtype]  # (every factory call asks: numpy's parse costs ~1 us)
    except (KeyError, TypeError):  # new, or unhashable
        pass
    d = _jnp.dtype(dtype)
    if len(_AS_DTYPE) < 256:
        try:
            _AS_DTYPE[dtype] = d
        except TypeError:
            pass
    return d


def category(dtype: Any) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex."""
    kind = np.dtype(dtype).kind
    return {"b": 0, "i": 1, "u": 1, "f": 2, "V": 2, "c": 3}[kind]  # V: bfloat16


def is_float(dtype: Any) -> bool:
    return category(dtype) >= 2


def to_float(dtype: Any) -> np.dtype:
    """The dtype a float-valued op (exp, div, mean...) computes in."""
    return np.dtype(dtype) if is_float(dtype) else default_float()


def is_weak(value: Any) -> builtins.bool:
    """A traced Python number inside a jitted kernel (weakly typed): it promotes like one."""
    return builtins.bool(getattr(value, "weak_type", False))


def scalar_dtype(value: Any) -> np.dtype:
    """The dtype PyTorch gives a Python number (bool, int64, default float)."""
    if is_weak(value):
        return {0: BOOL, 1: DEFAULT_INT, 2: default_float()}.get(category(value.dtype),
                                                              np.dtype("complex64"))
    if isinstance(value, (builtins.bool, np.bool_, SymBool)):
        return BOOL
    if isinstance(value, (int, np.integer, SymInt)):
        return DEFAULT_INT
    if isinstance(value, (complex, np.complexfloating)):
        return np.dtype("complex64")
    if isinstance(value, (float, np.floating, SymFloat)):
        return default_float()
    raise TypeError(f"expected a tensor or a number, got {type(value).__name__}")


def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """Two dtypes: the higher category wins; within a category, the wider one."""
    if a == b:  # the common case, and cheap (eager host kernels promote on every call)
        return np.dtype(a)
    ca, cb = category(a), category(b)
    if ca != cb:
        return np.dtype(a) if ca > cb else np.dtype(b)
    return np.dtype(_jnp.promote_types(a, b))


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """A higher tier's dtype, unless the lower tier is of a higher category."""
    if higher is None or lower is None:
        return higher if lower is None else lower
    if category(higher) >= 2:  # a float tensor with a complex scalar: its complex twin
        return complex_of(higher) if category(lower) == 3 and category(higher) == 2 else higher
    if category(higher) == 0 or category(lower) >= 2:
        return promote(higher, lower)
    return higher


def complex_of(dtype: Any) -> np.dtype:
    """The complex dtype of a float's precision, as PyTorch pairs them (float64 with
    complex128; float32, bfloat16 and float16 with complex64: JAX has no complex32)."""
    return np.dtype("complex128") if np.dtype(dtype) == np.dtype("float64") else \
        np.dtype("complex64")


def result_type(*values: Any) -> np.dtype:
    """PyTorch's result dtype of an elementwise op over tensors and Python scalars."""
    if values and type(values[0]) is np.ndarray:  # host values of one dtype (numpy has no
        dtype = values[0].dtype  # weak types): that dtype, without the tiers
        for v in values:
            if type(v) is not np.ndarray or v.dtype != dtype:
                break
        else:
            return dtype
    tiers: list[np.dtype | None] = [None, None, None]  # scalars, zero-dim, dimensioned
    for v in values:
        if v is None:
            continue
        dtype = getattr(v, "dtype", None)
        if dtype is None or not hasattr(v, "shape") or is_weak(v):
            tier, dtype = 0, scalar_dtype(v)
        else:
            tier, dtype = (2 if len(v.shape) else 1), np.dtype(dtype)
        tiers[tier] = dtype if tiers[tier] is None else promote(tiers[tier], dtype)
    out = _combine(tiers[1], tiers[0])
    out = _combine(tiers[2], out)
    if out is None:
        raise TypeError("result_type needs at least one tensor or number")
    return out


def cast(value: Any, dtype: np.dtype) -> Any:
    """A jax array (or Python scalar) as ``dtype`` — a no-op when it already is."""
    have = getattr(value, "dtype", None)
    if have is not None and have == dtype:  # numpy finds dtype('float64') == None true
        return value
    return jnp.asarray(value, dtype)


def can_cast(src: np.dtype, dst: np.dtype) -> builtins.bool:
    """In-place ops may not lower the category: ``int_tensor.mul_(0.5)`` is an error."""
    return category(src) <= category(dst)
