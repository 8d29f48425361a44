"""Small top-level names PyTorch programs use: ``torch.inf``/``nan``/``pi``/``e``/``newaxis``,
``torch._assert`` and ``torch.broadcast_shapes``.

>>> import autograd_compile as acg
>>> acg.broadcast_shapes((2, 1), (3,)), acg.inf > 1e308, acg.pi == __import__("math").pi
(acg.Size([2, 3]), True, True)
"""
from __future__ import annotations

import math
from typing import Any

from ._types import Size

inf, nan, pi, e = math.inf, math.nan, math.pi, math.e
newaxis = None


def _assert(condition: Any, message: str) -> None:
    """``assert condition, message`` as a function (PyTorch's, traceable by its tracers)."""
    if type(condition) is not bool and hasattr(condition, "__bool__"):
        condition = bool(condition)
    assert condition, message


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape tensors of ``shapes`` broadcast to (an int counts as a 1-d shape), with
    PyTorch's RuntimeError when two sizes differ and neither is 1."""
    out: list[int] = []
    for k, shape in enumerate(shapes):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        for s in shape:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                                   f"{list(shape)}")
        out = [1] * (len(shape) - len(out)) + out
        for i in range(1, len(shape) + 1):
            have, s = out[-i], shape[-i]
            if have == 1:
                out[-i] = s
            elif s != 1 and s != have:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {s} at {-i}! "
                                   f"Mismatching argument at index {k} had {shape}; but "
                                   f"expected shape should be broadcastable to {out}")
    return Size(out)


__all__ = ["inf", "nan", "pi", "e", "newaxis", "broadcast_shapes"]
