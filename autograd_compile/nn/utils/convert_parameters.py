"""Flatten parameters into one vector and back.

>>> import autograd_compile as acg
>>> ps = [acg.nn.Parameter(acg.ones(2, 2)), acg.nn.Parameter(acg.zeros(3))]
>>> v = acg.nn.utils.parameters_to_vector(ps); v.shape
acg.Size([7])
>>> acg.nn.utils.vector_to_parameters(v * 2, ps); ps[0].tolist()
[[2.0, 2.0], [2.0, 2.0]]
"""
from __future__ import annotations

from typing import Iterable

from ...kernels import api as A
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """Every parameter flattened and concatenated, in order (differentiable)."""
    return A.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Overwrite the parameters' values with consecutive slices of ``vec``."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        n = param.numel()
        param.data = vec[pointer:pointer + n].reshape(param.shape).detach()
        pointer += n
