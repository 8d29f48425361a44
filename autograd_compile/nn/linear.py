"""``Linear`` and ``Identity``.

>>> import autograd_compile as acg
>>> fc = acg.nn.Linear(4, 3, bias=False)
>>> fc, fc(acg.ones(2, 4)).shape
(Linear(in_features=4, out_features=3, bias=False), acg.Size([2, 3]))
"""
from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import empty_param
from .module import Module

__all__ = ["Identity", "Linear"]


class Identity(Module):
    """Returns its input unchanged (constructor arguments are accepted and ignored)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Any) -> Any:
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``; weight [out_features, in_features].

    Initialised as PyTorch does: weight kaiming_uniform_(a=sqrt(5)) (that is
    U(-1/sqrt(in), 1/sqrt(in))), bias U(-1/sqrt(in_features), 1/sqrt(in_features)).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = empty_param(out_features, in_features, dtype=dtype, device=device)
        if bias:
            self.bias = empty_param(out_features, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")
