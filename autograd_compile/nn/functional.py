"""``acg.nn.functional``: PyTorch's functional NN API over the fused ops in ``kernels/nn.py``.

>>> import autograd_compile as acg
>>> import autograd_compile.nn.functional as F
>>> logits = acg.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]], requires_grad=True)
>>> loss = F.cross_entropy(logits, acg.tensor([0, 2]))
>>> loss.backward(); loss.grad_fn.name(), logits.grad.shape
('CrossEntropyBackward0', (2, 3))
"""
from __future__ import annotations

from typing import Any, Sequence

from ..autograd.grad_mode import no_grad
from ..kernels import api as _api
from ..kernels import attention as _attn
from ..kernels import nn as _nn
from ..kernels.factories import default_generator as _default_generator
from ..kernels._dtypes import as_dtype, is_float
from ..kernels._shapes import shapes_equal
from ..tensor import Tensor

__all__ = ["linear", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
           "layer_norm", "cross_entropy", "nll_loss", "mse_loss", "dropout",
           "scaled_dot_product_attention", "embedding"]

_REDUCTIONS = ("none", "mean", "sum")


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``; ``weight`` is [out_features, in_features]."""
    return _nn.linear(input, weight, bias)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else input.relu()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; ``approximate="tanh"`` for the tanh approximation."""
    return _nn.gelu(input, approximate=approximate)


def silu(input: Tensor) -> Tensor:
    return input * input.sigmoid()


def sigmoid(input: Tensor) -> Tensor:
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    return input.tanh()


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """exp(x) / sum(exp(x)) along ``dim``, computed stably (max subtracted)."""
    return _nn.softmax(input, dim, as_dtype(dtype))


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """x - logsumexp(x) along ``dim``, computed stably."""
    return _nn.log_softmax(input, dim, as_dtype(dtype))


def layer_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims, then scale and shift."""
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _nn.layer_norm(input, shape, weight, bias, eps)


def _check_reduction(reduction: str) -> None:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of logits ``input`` [N, C, ...] against class indices ``target``
    [N, ...] (or class probabilities of ``input``'s shape), one fused op for indices.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> round(F.cross_entropy(acg.tensor([[0.0, 0.0]]), acg.tensor([1])).item(), 4)
    0.6931
    """
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


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             ignore_index: int = -100, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` [N, C] at ``target`` classes."""
    _check_reduction(reduction)
    c = 1 if input.ndim > 1 else 0
    valid = target != ignore_index
    safe = _api.where(valid, target, 0)
    picked = input.gather(c, safe.unsqueeze(c)).squeeze(c)
    w = valid.to(input.dtype) if weight is None else _api.index_select(weight, 0, safe.reshape(
        -1)).reshape(safe.shape) * valid
    loss = -picked * w
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / w.sum()


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean (or sum, or elementwise) squared error."""
    _check_reduction(reduction)
    return _nn.mse_loss(input, target, reduction)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
            ) -> Tensor:
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) (training only).

    The mask comes from ``acg.rand`` (reproducible after ``acg.manual_seed``).
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = _api.rand(list(input.shape), dtype=input.dtype) >= p
    scale = keep.to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(scale) if inplace else input * scale


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v over the last two dims, any leading batch/head dims.

    ``attn_mask``: bool (True = attend) or additive float, broadcast to [..., L, S];
    ``is_causal``: a top-left lower-triangular mask; ``dropout_p``: dropout on the attention
    probabilities, drawn from the global generator (``acg.manual_seed``). One fused op.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> q = acg.randn(2, 4, 5, 8)
    >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    (2, 4, 5, 8)
    """
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    rng = _default_generator.next_key() if dropout_p > 0.0 else None
    return _attn.sdpa(query, key, value, attn_mask, rng, dropout_p, is_causal, scale)[0]


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` [num_embeddings, dim] at the integer ``input`` indices.

    ``padding_idx`` rows get no gradient; ``max_norm`` renormalises the rows looked up in place
    (without autograd) as PyTorch does.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> w = acg.randn(10, 3, requires_grad=True)
    >>> F.embedding(acg.tensor([[1, 2], [4, 9]]), w, padding_idx=0).shape
    (2, 2, 3)
    """
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % rows
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    return _attn.embedding(weight, input, -1 if padding_idx is None else padding_idx,
                           scale_grad_by_freq, sparse)


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """Rows referenced by ``input`` with a norm above ``max_norm`` scaled down to it, in place."""
    with no_grad():
        idx = input.reshape(-1)
        rows = weight[idx]
        norms = _api.norm(rows, norm_type, -1, True)
        factor = _api.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[idx] = rows * factor


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dim (``num_classes=-1``: max + 1, eager only).

    >>> import autograd_compile as acg
    >>> acg.nn.functional.one_hot(acg.tensor([1, 0]), 3).tolist()
    [[0, 1, 0], [1, 0, 0]]
    """
    from ..kernels.api_select import one_hot as _one_hot
    return _one_hot(tensor, num_classes)


__all__ += ["one_hot"]
