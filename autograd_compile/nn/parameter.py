"""``nn.Parameter``: a leaf tensor that a Module registers as trainable.

>>> import autograd_compile as acg
>>> p = acg.nn.Parameter(acg.zeros(2))
>>> isinstance(p, acg.Tensor), p.requires_grad, p.is_leaf
(True, True, True)
"""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor, _init


class Parameter(Tensor):
    """A tensor that, assigned to a Module attribute, is registered as a parameter.

    ``Parameter(data=None, requires_grad=True)``: shares ``data``'s value (an empty
    tensor when ``data`` is None) and is always a leaf.
    """

    __slots__ = ()

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            from ..kernels.api import zeros
            data = zeros(0)
        array = data._data if isinstance(data, Tensor) else Tensor(data)._data
        _init(self, array)
        self.requires_grad_(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto: int) -> Any:
        return (_rebuild_parameter, (self.detach(), self.requires_grad))

    def __deepcopy__(self, memo: dict) -> "Parameter":
        if id(self) not in memo:
            memo[id(self)] = Parameter(self.detach(), self.requires_grad)
        return memo[id(self)]


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)
