"""``Bilinear``: y = x1^T W x2 + b, weight [out_features, in1_features, in2_features].

>>> import autograd_compile as acg
>>> m = acg.nn.Bilinear(2, 3, 4)
>>> m, m(acg.ones(5, 2), acg.ones(5, 3)).shape
(Bilinear(in1_features=2, in2_features=3, out_features=4, bias=True), acg.Size([5, 4]))
"""
from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import empty_param
from .module import Module

__all__ = ["Bilinear"]


class Bilinear(Module):
    """Initialised as PyTorch: weight and bias U(-1/sqrt(in1), 1/sqrt(in1))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = empty_param(out_features, in1_features, in2_features, dtype=dtype,
                                  device=device)
        if bias:
            self.bias = empty_param(out_features, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features="
                             f"{self.in1_features})")
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
