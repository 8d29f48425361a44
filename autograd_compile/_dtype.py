"""``acg.dtype``: the objects ``acg.float32``, ``Tensor.dtype`` ... are, as ``torch.dtype``.

One object per numpy dtype. Programs written for PyTorch use them as PyTorch's: as dict
keys and set members (``{acg.float16: ...}[t.dtype]``), through ``is_floating_point``,
``itemsize`` and ``to_complex()``, and by printing them (``torch.float32``, the text their
logs and checkpoint code parse). Everything numpy or JAX does with a dtype works on them
too: each carries its numpy dtype as ``.dtype``, which ``np.dtype(x)`` and every
``dtype=`` argument read, and it hashes and compares equal as that numpy dtype (and as
jnp's scalar type), so kernels keep working on numpy dtypes inside.

>>> import numpy as np
>>> f32 = of(np.dtype("float32"))
>>> f32, f32 == np.float32, f32.is_floating_point, f32.itemsize, f32.to_complex()
(torch.float32, True, True, 4, torch.complex64)
>>> {f32: "fp32"}[np.dtype("float32")], np.zeros(2, f32).dtype
('fp32', dtype('float32'))
"""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

_REAL_OF_COMPLEX = {"complex64": "float32", "complex128": "float64"}
_COMPLEX_OF_REAL = {"float32": "complex64", "float64": "complex128", "bfloat16": "complex64"}
_SCALAR_TYPE = {"int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte",
                "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "bool": "Bool",
                "float16": "Half", "float32": "Float", "float64": "Double", "bfloat16": "BFloat16",
                "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def scalar_type_name(np_dtype: Any) -> str:
    """PyTorch's C++ name of a dtype in its error texts (Float, Long, Float8_e5m2...)."""
    name = np.dtype(np_dtype).name
    return _SCALAR_TYPE.get(name, name[:1].upper() + name[1:])


_NUMPY_ATTRS = frozenset({"kind", "name", "char", "type", "str", "num", "alignment",
                          "byteorder", "descr", "isbuiltin", "isnative", "fields", "names",
                          "hasobject", "flags", "metadata"})


class dtype:  # noqa: N801  (PyTorch's name)
    """A tensor's element type, as ``torch.dtype``: ``acg.float32``, ``t.dtype``.

    >>> import autograd_compile as acg
    >>> acg.zeros(2).dtype, acg.zeros(2).dtype is acg.float32, acg.int64.is_signed
    (torch.float32, True, True)
    """

    __slots__ = ("dtype", "_hash")

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("cannot create 'acg.dtype' instances")  # as PyTorch

    @property
    def is_floating_point(self) -> bool:
        return self.dtype.kind in "fV"  # V: bfloat16 and the float8 types

    @property
    def is_complex(self) -> bool:
        return self.dtype.kind == "c"

    @property
    def is_signed(self) -> bool:
        return self.dtype.kind not in "ub"

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def to_real(self) -> "dtype":
        """The real dtype of a complex one (``complex64 -> float32``); others unchanged."""
        return of(np.dtype(_REAL_OF_COMPLEX.get(self.dtype.name, self.dtype)))

    def to_complex(self) -> "dtype":
        """The complex dtype of a floating one (``float64 -> complex128``)."""
        name = self.dtype.name
        if self.dtype.kind == "c":
            return self
        if name == "float16":  # PyTorch's complex32 has no numpy/JAX equivalent
            raise TypeError("float16.to_complex() is complex32, which autograd_compile lacks")
        if name not in _COMPLEX_OF_REAL:
            raise RuntimeError(f"Unknown Complex ScalarType for {scalar_type_name(self.dtype)}")
        return of(np.dtype(_COMPLEX_OF_REAL[name]))

    def __getattr__(self, name: str) -> Any:
        # numpy's descriptive attributes, which kernels read on t.dtype; not shape or ndim,
        # which would make a dtype look like an array to code that asks hasattr(x, "shape")
        if name in _NUMPY_ATTRS:
            return getattr(self.dtype, name)
        raise AttributeError(f"'torch.dtype' object has no attribute '{name}'")

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is dtype:
            return self is other
        if isinstance(other, (np.dtype, type)):  # not None or "float32": numpy reads them
            try:
                return self.dtype == np.dtype(other)
            except TypeError:
                pass
        return NotImplemented

    def __hash__(self) -> int:
        return self._hash  # numpy's: an acg dtype finds the numpy dtype's entry and back

    def __repr__(self) -> str:
        return f"torch.{self.dtype.name}"

    __str__ = __repr__

    def __reduce__(self) -> tuple:
        return of, (self.dtype,)


_OF: dict[np.dtype, dtype] = {}


def of(np_dtype: Any) -> dtype:
    """The ``acg.dtype`` of a numpy dtype (or anything ``jnp.dtype`` reads)."""
    try:
        return _OF[np_dtype]
    except (KeyError, TypeError):
        pass
    d = jnp.dtype(np_dtype)
    obj = _OF.get(d)
    if obj is None:
        obj = object.__new__(dtype)
        object.__setattr__(obj, "dtype", d)
        object.__setattr__(obj, "_hash", hash(d))
        _OF[d] = obj
    return obj
