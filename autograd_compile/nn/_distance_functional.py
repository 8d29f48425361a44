"""``nn.functional`` distances, ``bilinear``, ``embedding_bag`` and ``channel_shuffle``: each a
composition of existing ops (autograd for free), written so shapes never depend on data.

Norms here have PyTorch's gradient at zero (0, not NaN): a zero distance is common
(``pdist`` of repeated rows) and must not poison a training step.

>>> import autograd_compile as acg
>>> import autograd_compile.nn.functional as F
>>> F.pdist(acg.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 0.0]])).tolist()
[5.0, 0.0, 5.0]
"""
from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..autograd.grad_mode import no_grad
from ..kernels import api as _api
from ..kernels import api_select as _select
from ..kernels import attention as _attn
from ..kernels._dtypes import as_dtype
from ..amp.autocast_mode import autocast_op
from ..tensor import Tensor

_INT64 = as_dtype("int64")

__all__ = ["pairwise_distance", "cosine_similarity", "pdist", "bilinear", "embedding_bag",
           "channel_shuffle", "native_channel_shuffle"]


def vector_norm(x: Tensor, p: float, dim: int, keepdim: bool = False) -> Tensor:
    """The p-norm of ``x`` along ``dim`` with a zero (not NaN) gradient at a zero vector."""
    if p == math.inf:
        return x.abs().amax(dim, keepdim=keepdim)
    if p == -math.inf:
        return x.abs().amin(dim, keepdim=keepdim)
    if p == 0:
        return (x != 0).to(x.dtype).sum(dim, keepdim=keepdim)
    if p == 1:
        return x.abs().sum(dim, keepdim=keepdim)
    s = (x * x).sum(dim, keepdim=keepdim) if p == 2 else \
        (x.abs() ** p).sum(dim, keepdim=keepdim)
    positive = s > 0
    safe = _api.where(positive, s, 1.0)  # the root's gradient is infinite at 0
    root = safe.sqrt() if p == 2 else safe ** (1.0 / p)
    return _api.where(positive, root, 0.0)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p over the last dim (broadcasting).

    >>> import autograd_compile as acg
    >>> acg.nn.functional.pairwise_distance(acg.tensor([[3.0, 4.0]]), acg.zeros(1, 2), eps=0.0)
    tensor([5.])
    """
    ndim = max(x1.ndim, x2.ndim)
    if ndim == 0:
        raise RuntimeError("pairwise_distance: expected at least a 1-D input, got two 0-D "
                           "tensors")
    return vector_norm(x1 - x2 + eps, p, ndim - 1, keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum((x1 / max(||x1||, eps)) * (x2 / max(||x2||, eps))) along ``dim``; as PyTorch, the
    clamp is not differentiated (the gradient flows through the unclamped norm).

    >>> import autograd_compile as acg
    >>> acg.nn.functional.cosine_similarity(acg.tensor([[1.0, 0.0]]), acg.tensor([[1.0, 1.0]]))
    tensor([0.70710677])
    """
    n1, n2 = vector_norm(x1, 2, dim, True), vector_norm(x2, 2, dim, True)
    n1 = n1 + (n1.clamp_min(eps) - n1).detach()
    n2 = n2 + (n2.clamp_min(eps) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """p-norm distances between the rows of ``input`` [N, M]: the upper triangle (i < j) of
    the distance matrix, row by row, as a vector of N (N - 1) / 2."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], k=1)
    rows_i = input.index_select(0, _api.tensor(i.astype(np.int64)))
    rows_j = input.index_select(0, _api.tensor(j.astype(np.int64)))
    return vector_norm(rows_i - rows_j, p, -1)


@autocast_op("bilinear")
def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None
             ) -> Tensor:
    """y_k = x1^T W_k x2 + b_k over any leading dims; ``weight`` [out, in1, in2].

    >>> import autograd_compile as acg
    >>> w = acg.ones(1, 2, 3)
    >>> acg.nn.functional.bilinear(acg.ones(4, 2), acg.ones(4, 3), w).shape
    acg.Size([4, 1])
    """
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and "
                           f"{input2.ndim}")
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    if weight.ndim != 3 or input1.shape[-1] != weight.shape[1] or \
            input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input sizes {list(input1.shape)} and "
                           f"{list(input2.shape)} do not match the weight size "
                           f"{list(weight.shape)} (expected [out, {input1.shape[-1]}, "
                           f"{input2.shape[-1]}])")
    out = _select.einsum("...i,kij,...j->...k", input1, weight, input2)
    return out if bias is None else out + bias


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Channels (dim 1) of [N, C, *] regrouped: [N, g, C/g, *] -> [N, C/g, g, *].

    >>> import autograd_compile as acg
    >>> acg.nn.functional.channel_shuffle(acg.arange(4.0).reshape(1, 4, 1), 2).flatten().tolist()
    [0.0, 2.0, 1.0, 3.0]
    """
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    n, rest = input.shape[0], list(input.shape[2:])
    x = input.reshape([n, groups, c // groups] + rest).transpose(1, 2)
    return x.reshape([n, c] + rest)


native_channel_shuffle = channel_shuffle


# -- embedding_bag ------------------------------------------------------------------------------
def _bag_layout(input: Tensor, offsets: Tensor | None, per_sample_weights: Tensor | None,
                include_last_offset: bool) -> tuple[Tensor, Tensor, Tensor | None, int]:
    """Flat indices, each index's bag number, flat per-sample weights, and the bag count."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        bags, width = input.shape
        bag_of = _api.arange(bags).reshape(-1, 1).expand([bags, width]).reshape(-1)
        psw = None if per_sample_weights is None else per_sample_weights.reshape(-1)
        return input.reshape(-1), bag_of, psw, bags
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    starts = offsets[:bags] if include_last_offset else offsets
    positions = _api.arange(input.shape[0]).reshape(-1, 1)
    # an index's bag: the last bag starting at or before it (empty bags are skipped over);
    # the extra last offset is not read, as PyTorch's CPU kernel (the last bag runs to the end)
    bag_of = (positions >= starts.reshape(1, -1)).to(_INT64).sum(1) - 1
    return input, bag_of, per_sample_weights, bags


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embedding rows, without the [bags, len, dim]
    intermediate: ``input`` [B, L] (fixed bags) or 1-D with ``offsets`` (bag starts);
    ``per_sample_weights`` scale rows ("sum" only); ``padding_idx`` rows are left out (and
    not counted in a mean); an empty bag gives zeros.

    >>> import autograd_compile as acg
    >>> w = acg.arange(10.0).reshape(5, 2)
    >>> acg.nn.functional.embedding_bag(acg.tensor([0, 2, 4]), w, acg.tensor([0, 1]),
    ...                                 mode="sum").tolist()
    [[0.0, 1.0], [12.0, 14.0]]
    """
    if weight.dtype == _INT64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if mode == "max" and sparse:
        raise ValueError("max mode does not support sparse weights")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    idx, bag_of, psw, bags = _bag_layout(input, offsets, per_sample_weights,
                                         include_last_offset)
    if max_norm is not None:
        _renorm_rows(weight, idx, max_norm, norm_type)
    return _bag_reduce(idx, bag_of, weight, psw, bags, mode, padding_idx)


def _renorm_rows(weight: Tensor, idx: Tensor, max_norm: float, norm_type: float) -> None:
    """Rows looked up with a norm above ``max_norm`` scaled down to it, in place."""
    with no_grad():
        rows = weight[idx]
        norms = vector_norm(rows, norm_type, -1, True)
        weight[idx] = rows * _api.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)


def _bag_reduce(idx: Tensor, bag_of: Tensor, weight: Tensor, psw: Tensor | None, bags: int,
                mode: str, padding_idx: int | None) -> Tensor:
    rows_n, dim = weight.shape
    keep = bag_of >= 0
    if padding_idx is not None:
        if not -rows_n <= padding_idx < rows_n:
            raise AssertionError("padding_idx must be within num_embeddings")
        keep = keep & (idx != padding_idx % rows_n)
    rows = _attn.embedding(weight, idx, -1, False, False)  # [n, dim]
    if mode == "max":
        member = (bag_of.reshape(1, -1) == _api.arange(bags).reshape(-1, 1)) & \
            keep.reshape(1, -1)
        masked = _api.where(member.unsqueeze(-1), rows.unsqueeze(0), -math.inf)
        best = masked.amax(1) if idx.shape[0] else _api.zeros(bags, dim, dtype=weight.dtype)
        return _api.where(member.any(1, keepdim=True), best, 0.0)
    scale = keep.to(weight.dtype)
    if psw is not None:
        scale = scale * psw.to(weight.dtype)
    target = _api.where(keep, bag_of, 0)  # rows left out add zero to bag 0
    out = _api.zeros(bags, dim, dtype=weight.dtype).index_add(0, target, rows * scale.unsqueeze(1))
    if mode == "mean":
        count = _api.zeros(bags, dtype=weight.dtype).index_add(0, target, keep.to(weight.dtype))
        out = out / count.clamp_min(1.0).unsqueeze(1)
    return out
