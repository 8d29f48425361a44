"""``nn.functional`` losses beyond the fused ones of ``kernels/losses.py``: each a composition
of existing ops (autograd for free) following PyTorch's formula, except ``ctc_loss`` (one op,
``kernels/ctc.py``). ``reduction`` is "none" | "mean" | "sum" (``kl_div`` adds "batchmean");
the deprecated ``size_average``/``reduce`` flags map onto it with PyTorch's warning.

>>> import autograd_compile as acg
>>> import autograd_compile.nn.functional as F
>>> F.margin_ranking_loss(acg.tensor([1.0, 2.0]), acg.tensor([2.0, 1.0]), acg.tensor([1, 1]))
tensor(0.5)
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Callable

from ..kernels import api as _api
from ..kernels import ctc as _ctc
from ..kernels import losses as _losses
from ..kernels import nn as _nn
from ..kernels._dtypes import is_float
from ..amp.autocast_mode import autocast_op
from ..tensor import Tensor
from ._activation_functional import logsigmoid
from ._cross_entropy import cross_entropy
from ._distance_functional import pairwise_distance
from ._reduction import resolve

__all__ = ["kl_div", "huber_loss", "soft_margin_loss", "multi_margin_loss",
           "multilabel_margin_loss", "multilabel_soft_margin_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss", "ctc_loss", "poisson_nll_loss",
           "gaussian_nll_loss", "cosine_embedding_loss", "margin_ranking_loss",
           "hinge_embedding_loss", "linear_cross_entropy"]

def _check(reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def concrete(t: Tensor) -> bool:
    """Whether ``t`` holds values (not a FakeTensor traced by ``acg.compile``): value checks
    such as torch's run only then, so that a compiled program stays one graph."""
    from ..tracing.fake import FakeTensor  # fake imports nn lazily; a local import avoids a cycle
    return not isinstance(t, FakeTensor)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    _check(reduction)
    return loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.mean()


def _xlogy(x: Tensor) -> Tensor:
    """x * log(x) with 0 at x = 0 (and a finite gradient there); nan below 0, as torch.xlogy."""
    zero = x == 0
    return _api.where(zero, 0.0, x * _api.where(zero, 1.0, x).log())


@autocast_op("kl_div")
def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean", log_target: bool = False
           ) -> Tensor:
    """KL(target || exp(input)) pointwise: target * (log target - input), ``input`` holding
    log-probabilities (``log_target``: ``target`` too); "batchmean" divides the sum by N.

    >>> import autograd_compile as acg
    >>> p = acg.tensor([[0.5, 0.5]])
    >>> acg.nn.functional.kl_div(p.log(), p, reduction="batchmean").item()
    0.0
    """
    if size_average is not None or reduce is not None:
        how = resolve(size_average, reduce, reduction)
    else:
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                          "the support size.'batchmean' divides only by the batch size, and "
                          "aligns with the KL div math definition.'mean' will be changed to "
                          "behave the same as 'batchmean' in the next major release.",
                          stacklevel=2)
        how = "sum" if reduction == "batchmean" else reduction
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _xlogy(target) - target * input
    out = _reduce(loss, how)
    # "batchmean" divides whatever the flags reduced to, as PyTorch
    return out / input.shape[0] if reduction == "batchmean" and input.ndim else out


@autocast_op("huber_loss")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); ``weight`` per element."""
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.size()}) that is different to the input "
                      f"size ({input.size()}). This will likely lead to incorrect results due "
                      f"to broadcasting. Please ensure they have the same size.", stacklevel=2)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got "
                           f"{delta}")
    diff = input - target
    d = diff.abs()
    loss = _api.where(d < delta, diff * diff * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError("Weights and input must have the same size.")
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_op("soft_margin_loss")
def soft_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target * input)), targets in {1, -1}."""
    reduction = resolve(size_average, reduce, reduction)
    return _reduce(_losses.softplus(-target * input, 1.0, math.inf), reduction)


def _class_dim_checks(name: str, input: Tensor, target: Tensor) -> None:
    if input.ndim > 2:
        raise RuntimeError(f"{name}: expected input of shape [N, C] or [C], got "
                           f"{list(input.shape)}")
    n = input.shape[0] if input.ndim == 2 else 1
    if target.numel() != n or target.ndim > 1:
        raise RuntimeError(f"inconsistent target size, expected {n} but got "
                           f"{list(target.shape)}")


@autocast_op("multi_margin_loss")
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average: bool | None = None,
                      reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-class hinge: sum over i != y of max(0, margin - x[y] + x[i])^p / C, each term
    scaled by ``weight[y]``."""
    reduction = resolve(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    _class_dim_checks("multi_margin_loss", input, target)
    x = input if input.ndim == 2 else input.reshape(1, -1)
    y = target.reshape(-1, 1)
    z = x.gather(1, y) * -1 + x + margin
    z = _api.where(z > 0, z, 0.0)
    z = z * z if p == 2 else z
    if weight is not None:
        z = z * weight.index_select(0, y.reshape(-1)).reshape(-1, 1)
    others = _api.arange(x.shape[1]).reshape(1, -1) != y
    loss = _api.where(others, z, 0.0).sum(1) / x.shape[1]
    loss = loss if input.ndim == 2 else loss.reshape([])
    return _reduce(loss, reduction)


@autocast_op("multilabel_margin_loss")
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average: bool | None = None,
                           reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Multi-label hinge: ``target`` lists each sample's classes, ended by the first -1;
    sum over listed j and unlisted i of max(0, 1 - (x[j] - x[i])) / C."""
    reduction = resolve(size_average, reduce, reduction)
    if input.ndim > 2 or tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    t = target.reshape(x.shape)
    classes = x.shape[1]
    listed = (t != -1).to(t.dtype).cumprod(1) > 0  # classes before the first -1
    safe = _api.where(listed, t, 0)
    hits = (safe.unsqueeze(-1) == _api.arange(classes).reshape(1, 1, -1)) & listed.unsqueeze(-1)
    is_target = hits.any(1)  # [N, C]
    x_t = x.gather(1, safe)  # [N, K]
    z = x_t.unsqueeze(-1) * -1 + x.unsqueeze(1) + 1.0  # [N, K, C]
    valid = listed.unsqueeze(-1) & ~is_target.unsqueeze(1) & (z > 0)
    loss = _api.where(valid, z, 0.0).sum((1, 2)) / classes
    loss = loss if input.ndim == 2 else loss.reshape([])
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average: bool | None = None, reduce: bool | None = None,
                                reduction: str = "mean") -> Tensor:
    """Per-class binary cross-entropy of logits, averaged over the classes (last dim)."""
    reduction = resolve(size_average, reduce, reduction)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    c = input.ndim - 1
    loss = loss.sum(c) / input.shape[c]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


def _same_ndim(anchor: Tensor, positive: Tensor, negative: Tensor) -> None:
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == p == n:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {p}D, and "
                           f"negative {n}D inputs")


@autocast_op("triplet_margin_loss")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, margin + d(a, p) - d(a, n)) with d the p-norm pairwise distance; ``swap``: the
    negative's distance is the smaller of d(a, n) and d(p, n)."""
    reduction = resolve(size_average, reduce, reduction)
    _check(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_ndim(anchor, positive, negative)

    def dist(x1: Tensor, x2: Tensor) -> Tensor:
        return pairwise_distance(x1, x2, p, eps)
    return _triplet(anchor, positive, negative, dist, margin, swap, reduction)


def _triplet(anchor: Tensor, positive: Tensor, negative: Tensor, dist: Callable, margin: float,
             swap: bool, reduction: str) -> Tensor:
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = _api.minimum(d_neg, dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function: Callable | None = None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """:func:`triplet_margin_loss` with any ``distance_function`` (default pairwise_distance)."""
    _check(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _same_ndim(anchor, positive, negative)
    return _triplet(anchor, positive, negative, distance_function or pairwise_distance, margin,
                    swap, reduction)


def _lengths(v: Any, n: int, name: str) -> Tensor:
    t = v if isinstance(v, Tensor) else _api.tensor(list(v) if not isinstance(v, int) else [v])
    if t.is_floating_point():
        raise RuntimeError(f"ctc_loss: expected {name} of an integer dtype, got {t.dtype.name}")
    return t.reshape(n)


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss of ``log_probs`` [T, N, C] (or [T, C]) against
    ``targets`` [N, S] padded (or 1-D, concatenated); one op whose forward is one scan over
    time. "mean" divides each sample's loss by its target length, then averages.

    >>> import autograd_compile as acg
    >>> lp = acg.randn(6, 2, 4).log_softmax(2)
    >>> acg.nn.functional.ctc_loss(lp, acg.tensor([[1, 2], [3, 3]]), [6, 5], [2, 2]).shape
    acg.Size([])
    """
    _check(reduction)
    unbatched = log_probs.ndim == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    n = lp.shape[1]
    il, tl = _lengths(input_lengths, n, "input_lengths"), _lengths(target_lengths, n,
                                                                     "target_lengths")
    tg = targets.reshape(1, -1) if unbatched else targets
    if not unbatched and tg.ndim == 1:  # concatenated targets: pad them into [N, max length]
        width = max(int(tl.max().item()), 1) if n else 1
        starts = tl.cumsum(0) - tl
        pos = starts.reshape(-1, 1) + _api.arange(width).reshape(1, -1)
        tg = tg.index_select(0, pos.clamp_max(max(tg.shape[0] - 1, 0)).reshape(-1)) \
            .reshape(n, width) if tg.shape[0] else _api.zeros(n, width, dtype=tg.dtype)
    loss = _ctc.ctc_loss(lp, tg, il, tl, blank, zero_infinity)
    if reduction == "mean":
        return (loss / tl.clamp_min(1).to(loss.dtype)).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.reshape([]) if unbatched else loss


@autocast_op("poisson_nll_loss")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """exp(x) - t x (``log_input``) or x - t log(x + eps); ``full`` adds Stirling's term
    t log t - t + log(2 pi t) / 2 where t > 1."""
    reduction = resolve(size_average, reduce, reduction)
    _check(reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        big = target > 1
        safe = _api.where(big, target, 1.0)
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + _api.where(big, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """(log var + (input - target)^2 / var) / 2 (+ log(2 pi) / 2 with ``full``); ``var`` is
    clamped at ``eps`` without differentiating the clamp, as PyTorch."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = _api.ones_like(input) * var
    elif concrete(var) and bool((var < 0).any()):  # a value check: eager only
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var + (var.clamp_min(eps) - var).detach()  # the clamp's value, identity's gradient
    diff = input - target
    loss = (var.log() + diff * diff / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@autocast_op("cosine_embedding_loss")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                          size_average: bool | None = None, reduce: bool | None = None,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1."""
    reduction = resolve(size_average, reduce, reduction)
    _check(reduction)
    if input1.ndim != input2.ndim or input1.ndim not in (1, 2):
        raise RuntimeError(f"cosine_embedding_loss: expected 1D or 2D inputs of the same "
                           f"dimensions, got {input1.ndim}D and {input2.ndim}D")
    if input1.ndim - 1 != target.ndim:
        raise RuntimeError(f"{input1.ndim}D target tensor expects {input1.ndim + 1}D input "
                           f"tensors, but found inputs with sizes {list(input1.shape)} and "
                           f"{list(input2.shape)}.")
    d = input1.ndim - 1
    prod = (input1 * input2).sum(d)
    mag1 = (input1 * input1).sum(d) + 1e-12
    mag2 = (input2 * input2).sum(d) + 1e-12
    cos = prod / (mag1 * mag2).sqrt()
    pos = _api.where(target == 1, 1 - cos, 0.0)
    neg = _api.where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(pos + neg, reduction)


@autocast_op("margin_ranking_loss")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0,
                        size_average: bool | None = None, reduce: bool | None = None,
                        reduction: str = "mean") -> Tensor:
    """max(0, -target * (input1 - input2) + margin)."""
    reduction = resolve(size_average, reduce, reduction)
    _check(reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.size()}, input2: {input2.size()}, "
                           f"target: {target.size()} ")
    return _reduce(((input1 - input2) * -target + margin).clamp_min(0), reduction)


@autocast_op("hinge_embedding_loss")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """x where target is 1, max(0, margin - x) where it is -1."""
    reduction = resolve(size_average, reduce, reduction)
    _check(reduction)
    below = _api.where(target != 1, (input * -1 + margin).clamp_min(0), 0.0)
    own = _api.where(target != -1, input, 0.0)
    return _reduce(below + own, reduction)


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,
                         linear_bias: Tensor | None = None, weight: Tensor | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options: Any = None) -> Tensor:
    """cross_entropy(linear(input), target) for ``linear_weight`` [C, *out_features, in];
    ``options`` (PyTorch's chunking policy) are accepted: the result is the same."""
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    if input.shape[-1] != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and {linear_weight.shape[-1]}, "
                           f"respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and input.ndim == 1:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{input.shape[-1]}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits = _nn.linear(input, linear_weight.reshape(-1, input.shape[-1]), None)
    logits = logits.reshape(tuple(input.shape[:-1]) + (classes,) + out_features)
    if linear_bias is not None:
        logits = logits + linear_bias
    probs = is_float(target.dtype) and tuple(target.shape) == tuple(logits.shape)
    if probs and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    return cross_entropy(logits, target, weight,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         reduction=reduction, label_smoothing=label_smoothing)
