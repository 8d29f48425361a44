"""PyTorch's ``torch.nn.modules.utils``: the argument helpers layer code imports
(``_pair(3) == (3, 3)``) to accept an int or a tuple for sizes, strides and paddings.

>>> from autograd_compile.nn.modules.utils import _pair, _triple
>>> _pair(3), _pair((1, 2)), _triple(2)
((3, 3), (1, 2), (2, 2, 2))
"""
from __future__ import annotations

import collections.abc
from itertools import repeat
from typing import Any, Callable


def _ntuple(n: int, name: str = "parse") -> Callable[[Any], tuple]:
    def parse(x: Any) -> tuple:
        if isinstance(x, collections.abc.Iterable):  # (a string too, as PyTorch's)
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _reverse_repeat_tuple(t: tuple, n: int) -> tuple:
    """Each element of ``t`` ``n`` times, last first (``F.pad``'s order from conv padding)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size: Any, defaults: list) -> list:
    """An adaptive pool's output size with each None taken from the input's ``defaults``."""
    if isinstance(out_size, (int, float)):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]
