"""PyTorch's pickle names for dtypes and storages, both ways.

A PyTorch checkpoint names a tensor's element type twice over: the legacy typed-storage class
(``torch.FloatStorage``) for the twelve classic dtypes, or ``torch.storage.UntypedStorage``
plus the dtype itself (``torch.uint16``) for the newer ones.

>>> STORAGE_OF["bfloat16"], DTYPE_OF_STORAGE["LongStorage"]
('BFloat16Storage', 'int64')
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

# our dtype name -> PyTorch's typed storage class (in the ``torch`` module)
STORAGE_OF = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
    "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage",
}
DTYPE_OF_STORAGE = {v: k for k, v in STORAGE_OF.items()}

# PyTorch's dtype names (``torch.<name>``) that have a numpy/JAX equivalent here
TORCH_DTYPES = {
    **{n: n for n in ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16",
                      "int8", "uint8", "uint16", "uint32", "uint64", "bool", "complex64",
                      "complex128", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                      "float8_e5m2fnuz")},
    # PyTorch's aliases
    "float": "float32", "double": "float64", "half": "float16", "long": "int64", "int": "int32",
    "short": "int16", "bool_": "bool", "cfloat": "complex64", "cdouble": "complex128",
}


def as_dtype(torch_name: str) -> np.dtype:
    """The numpy dtype of ``torch.<torch_name>``; KeyError when we have none."""
    return jnp.dtype(TORCH_DTYPES[torch_name])


def torch_name(dtype: np.dtype) -> str:
    """``torch.<name>`` of a numpy/JAX dtype."""
    name = jnp.dtype(dtype).name
    if name not in TORCH_DTYPES:
        raise TypeError(f"acg.save: dtype {name} has no PyTorch equivalent")
    return name
