"""``.safetensors`` files through the safetensors library's numpy API (an optional extra).

>>> import autograd_compile as acg  # doctest: +SKIP
>>> acg.save({"w": acg.ones(2)}, "model.safetensors")  # doctest: +SKIP
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np


def _lib() -> Any:
    try:
        from safetensors import numpy as st
    except ImportError as e:
        raise ImportError("reading or writing .safetensors needs the safetensors library: "
                          "pip install 'autograd-compile[safetensors]'") from e
    return st


def dumps(obj: Any) -> bytes:
    """A flat ``{name: tensor}`` dict as safetensors bytes."""
    from ..tensor import Tensor
    if not isinstance(obj, dict) or not all(isinstance(k, str) and isinstance(v, Tensor)
                                            for k, v in obj.items()):
        raise TypeError("acg.save: a .safetensors file holds a flat dict of str -> tensor "
                        "(a state_dict)")
    from ..kernels._host import read  # a global tensor: its replicated value, or a clear error
    return _lib().save({k: np.ascontiguousarray(read(v._data, f"acg.save ({k!r})"))
                        for k, v in obj.items()})


def loads(raw: bytes, place: Callable[[np.ndarray, str], Any]) -> dict:
    """The ``{name: tensor}`` dict of safetensors bytes, each placed by ``place``."""
    from ..tensor import _make
    return {k: _make(place(v, "cpu")) for k, v in _lib().load(raw).items()}
