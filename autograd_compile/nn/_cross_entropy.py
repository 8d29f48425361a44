"""``cross_entropy`` and the reduction check, which the functional modules share: its own module
so ``functional`` and ``_loss_functional`` both import it, and neither imports the other."""
from __future__ import annotations

from ..kernels import nn as _nn
from ..kernels._dtypes import is_float
from ..kernels._shapes import shapes_equal
from ..tensor import Tensor
from ._reduction import resolve

_REDUCTIONS = ("none", "mean", "sum")


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average: bool | None = None, ignore_index: int = -100,
                  reduce: bool | None = None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of logits ``input`` [N, C, ...] against class indices ``target``
    [N, ...] (or class probabilities of ``input``'s shape), one fused op for indices.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> round(F.cross_entropy(acg.tensor([[0.0, 0.0]]), acg.tensor([1])).item(), 4)
    0.6931
    """
    reduction = resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if is_float(target.dtype) and shapes_equal(target.shape, input.shape):
        return _soft_cross_entropy(input, target, weight, reduction, label_smoothing)
    return _nn.cross_entropy(input, target, weight, reduction, ignore_index, label_smoothing)


def _soft_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None, reduction: str,
                        label_smoothing: float) -> Tensor:
    """Class-probability targets: -sum_c target_c * log_softmax_c (composed, not fused)."""
    c = 1 if input.ndim > 1 else 0
    classes = input.shape[c]
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    logp = _nn.log_softmax(input, c, None)
    if weight is not None:
        logp = logp * weight.reshape([-1] + [1] * (input.ndim - c - 1))
    loss = -(logp * target).sum(c)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / (loss.numel() if c else 1)
