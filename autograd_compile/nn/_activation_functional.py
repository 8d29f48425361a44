"""``nn.functional`` activations, each a composition of existing ops (autograd for free).

Gradients follow PyTorch's formulas exactly, including at the kinks: ``where(mask, a, b)``
passes the gradient of the branch taken, so ``hardtanh``'s gradient is zero at its bounds,
``leaky_relu``'s is the slope at 0, as PyTorch's kernels give. In-place forms (``elu_``,
``F.leaky_relu(x, inplace=True)``, ...) write the result into ``input`` and return it.

>>> import autograd_compile as acg
>>> import autograd_compile.nn.functional as F
>>> F.hardtanh(acg.tensor([-2.0, 0.5, 3.0])).tolist()
[-1.0, 0.5, 1.0]
"""
from __future__ import annotations

import warnings
from typing import Any, Callable

from ..autograd.derivatives import alias_for_inplace
from ..kernels import api as _api
from ..kernels import losses as _losses
from ..kernels import nn as _nn
from ..kernels._dtypes import as_dtype
from ..amp.autocast_mode import autocast_op
from ..tensor import Tensor

__all__ = ["threshold", "threshold_", "relu_", "relu6", "hardtanh", "hardtanh_", "elu", "elu_",
           "selu", "selu_", "celu", "celu_", "leaky_relu", "leaky_relu_", "prelu", "rrelu",
           "rrelu_", "glu", "logsigmoid", "hardshrink", "softshrink", "tanhshrink", "softsign",
           "softmin", "gumbel_softmax", "hardsigmoid", "hardswish", "mish"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _apply(input: Tensor, fn: Callable[[Tensor], Tensor], inplace: bool) -> Tensor:
    """``fn(input)``, or written into ``input`` (the op differentiates through the old value)."""
    if not inplace:
        return fn(input)
    return input.copy_(fn(alias_for_inplace(input)))


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where it is above ``threshold``, else ``value``.

    >>> import autograd_compile as acg
    >>> acg.nn.functional.threshold(acg.tensor([0.5, 2.0]), 1.0, -1.0).tolist()
    [-1.0, 2.0]
    """
    return _apply(input, lambda x: _api.where(x > threshold, x, value), inplace)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return _apply(input, lambda x: _api.where(x > threshold, x, value), True)


def relu_(input: Tensor) -> Tensor:
    """In-place relu."""
    return input.relu_()


def _hardtanh(x: Tensor, lo: float, hi: float) -> Tensor:
    # gradient 1 strictly inside (lo, hi), 0 at and beyond the bounds (PyTorch's kernel)
    inside = (x > lo) & (x < hi)
    return _api.where(inside, x, _api.where(x <= lo, lo, hi).to(x.dtype))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``input`` clamped to [min_val, max_val].

    >>> import autograd_compile as acg
    >>> acg.nn.functional.hardtanh(acg.tensor([-3.0, 0.2]), -2.0, 2.0).tolist()
    [-2.0, 0.20000000298023224]
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _apply(input, lambda x: _hardtanh(x, min_val, max_val), inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`."""
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(0, x), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def _elu(x: Tensor, alpha: float, scale: float = 1.0, input_scale: float = 1.0) -> Tensor:
    neg = (x * input_scale).expm1() * (alpha * scale)
    return _api.where(x > 0, x * scale if scale != 1.0 else x, neg)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise.

    >>> import autograd_compile as acg
    >>> round(acg.nn.functional.elu(acg.tensor([-1.0])).item(), 4)
    -0.6321
    """
    return _apply(input, lambda x: _elu(x, alpha), inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu`."""
    return elu(input, alpha, inplace=True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalising constants of Klambauer et al."""
    return _apply(input, lambda x: _elu(x, _SELU_ALPHA, _SELU_SCALE), inplace)


def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`."""
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _apply(input, lambda x: _elu(x, alpha, 1.0, 1.0 / alpha), inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, negative_slope * x otherwise.

    >>> import autograd_compile as acg
    >>> acg.nn.functional.leaky_relu(acg.tensor([-2.0, 3.0]), 0.5).tolist()
    [-1.0, 3.0]
    """
    return _apply(input, lambda x: _api.where(x > 0, x, x * negative_slope), inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place :func:`leaky_relu`."""
    return leaky_relu(input, negative_slope, inplace=True)


@autocast_op("prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """x for x > 0, weight * x otherwise; ``weight`` has 1 element or one per channel (dim 1).

    >>> import autograd_compile as acg
    >>> acg.nn.functional.prelu(acg.tensor([[-2.0, 3.0]]), acg.tensor([0.25])).tolist()
    [[-0.5, 3.0]]
    """
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {weight.numel()} and channel size = {channels}.")
    w = weight.reshape([-1] + [1] * (input.ndim - 2)) if input.ndim >= 2 and \
        weight.numel() > 1 else weight.reshape([])
    return _api.where(input > 0, input, input * w)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomised leaky relu: in training each non-positive element gets a slope drawn
    uniformly from [lower, upper] (the global generator); in eval the slope is their mean."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slope = _api.rand(list(input.shape), dtype=input.dtype) * (upper - lower) + lower
    return _apply(input, lambda x: _api.where(x > 0, x, x * slope), inplace)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """In-place :func:`rrelu`."""
    return rrelu(input, lower, upper, training, inplace=True)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """a * sigmoid(b), where a and b are the two halves of ``input`` along ``dim``.

    >>> import autograd_compile as acg
    >>> acg.nn.functional.glu(acg.tensor([[2.0, 0.0]])).tolist()
    [[1.0]]
    """
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = dim % input.ndim
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    return -_losses.softplus(-input, 1.0, 20.0)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x where |x| > lambd, else 0."""
    return _api.where((input > lambd) | (input < -lambd), input, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _api.where(input > lambd, input - lambd,
                      _api.where(input < -lambd, input + lambd, 0.0))


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    return input - input.tanh()


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return input / (input.abs() + 1)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: Any = None) -> Tensor:
    """softmax(-x) along ``dim``.

    >>> import autograd_compile as acg
    >>> acg.nn.functional.softmin(acg.tensor([0.0, 0.0]), dim=0).tolist()
    [0.5, 0.5]
    """
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim, _stacklevel)
    x = input if dtype is None else input.to(as_dtype(dtype))
    return _nn.softmax(-x, dim, None)


def gumbel_softmax(logits: Tensor, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """softmax((logits + g) / tau) with Gumbel(0, 1) noise g from the global generator;
    ``hard``: the one-hot of the argmax forward, the soft sample's gradient backward."""
    u = _api.rand(list(logits.shape), dtype=logits.dtype)
    gumbels = -(-u.log()).log()  # -log(Exponential(1)); u < 1 so never +inf
    y_soft = _nn.softmax((logits + gumbels) / tau, dim, None)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    positions = _api.arange(logits.shape[dim]).reshape(
        [-1] + [1] * (logits.ndim - 1 - dim % logits.ndim))
    y_hard = (positions == index).to(logits.dtype)
    return y_hard - y_soft.detach() + y_soft


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """0 below -3, 1 above 3, x / 6 + 1/2 between."""
    def fn(x: Tensor) -> Tensor:
        inside = (x > -3) & (x < 3)
        return _api.where(inside, x / 6 + 0.5, _api.where(x <= -3, 0.0, 1.0).to(x.dtype))
    return _apply(input, fn, inplace)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * relu6(x + 3) / 6."""
    def fn(x: Tensor) -> Tensor:
        return _api.where(x < -3, 0.0, _api.where(x <= 3, x * (x + 3) / 6, x))
    return _apply(input, fn, inplace)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _apply(input, lambda x: x * _losses.softplus(x, 1.0, 20.0).tanh(), inplace)

