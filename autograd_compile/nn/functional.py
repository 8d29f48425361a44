"""``acg.nn.functional``: PyTorch's functional NN API over the fused ops in ``kernels/nn.py``.

>>> import autograd_compile as acg
>>> import autograd_compile.nn.functional as F
>>> logits = acg.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]], requires_grad=True)
>>> loss = F.cross_entropy(logits, acg.tensor([0, 2]))
>>> loss.backward(); loss.grad_fn.name(), logits.grad.shape
('CrossEntropyBackward0', acg.Size([2, 3]))
"""
from __future__ import annotations

from typing import Any, Sequence

from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..kernels import api as _api
from ..kernels import attention as _attn
from ..kernels import conv as _conv
from ..kernels import losses as _losses
from ..kernels import nn as _nn
from ..kernels.factories import default_generator as _default_generator
from ..sparse._embedding import embedding as _sparse_embedding
from ..kernels._dtypes import as_dtype
from ..kernels._shapes import shapes_equal
from ..tensor import Tensor
from ._cross_entropy import _check_reduction, cross_entropy
from ._reduction import resolve

__all__ = ["linear", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
           "layer_norm", "rms_norm", "cross_entropy", "nll_loss", "mse_loss", "dropout",
           "scaled_dot_product_attention", "embedding", "conv1d", "conv2d", "conv3d",
           "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "batch_norm", "l1_loss",
           "smooth_l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "softplus", "normalize", "pad"]



def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``; ``weight`` is [out_features, in_features]."""
    return _nn.linear(input, weight, bias)


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else input.relu()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; ``approximate="tanh"`` for the tanh approximation."""
    return _nn.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x), one op."""
    out = _losses.silu(input)
    return input.copy_(out) if inplace else out


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold."""
    return _losses.softplus(input, beta, threshold)


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


def rms_norm(input: Tensor, normalized_shape: int | Sequence[int], weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dims, then scale
    (``eps=None``: the input dtype's machine epsilon, as PyTorch).

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.rms_norm(acg.tensor([[3.0, 4.0]]), 2, eps=0.0).tolist()  # rms = sqrt(12.5)
    [[0.8485281467437744, 1.1313709020614624]]
    """
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    return _nn.rms_norm(input, shape, weight, eps)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
             size_average: Any = None, ignore_index: int = -100, reduce: Any = None,
             reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities ``input`` [N, C, d1, ...] (or [C]) at the
    ``target`` classes [N, d1, ...]; ``weight`` per class, ``ignore_index`` skipped, "mean"
    divides by the summed weights of the targets counted."""
    reduction = resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    return _losses.nll_loss(input, target, weight, reduction, ignore_index)


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
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q @ k^T * scale + mask) @ v over the last two dims, any leading batch/head dims.

    ``attn_mask``: bool (True = attend) or additive float, broadcast to [..., L, S];
    ``is_causal``: a top-left lower-triangular mask; ``dropout_p``: dropout on the attention
    probabilities, drawn from the global generator (``acg.manual_seed``); ``enable_gqa``:
    key and value may have fewer heads (dim -3) than the query, each serving a group of
    query heads (grouped-query attention). One fused op.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> q = acg.randn(2, 4, 5, 8)
    >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    acg.Size([2, 4, 5, 8])
    """
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if enable_gqa and query.dim() >= 3 and key.dim() >= 3:
        key, value = _gqa_heads(query, key), _gqa_heads(query, value)
    rng = _default_generator.next_key() if dropout_p > 0.0 else None
    grad = is_grad_enabled() and any(t is not None and t.requires_grad
                                     for t in (query, key, value, attn_mask))
    op = _attn.sdpa if grad else _attn.sdpa_nograd  # no gradient: the host tier may run it
    return op(query, key, value, attn_mask, rng, dropout_p, is_causal, scale)[0]


def _gqa_heads(query: Tensor, kv: Tensor) -> Tensor:
    """``kv``'s heads (dim -3) repeated so each serves its group of query heads."""
    hq, hk = query.shape[-3], kv.shape[-3]
    if hq == hk:
        return kv
    if hq % hk:
        raise RuntimeError(f"scaled_dot_product_attention: number of heads in key/value ({hk}) "
                           f"must divide the number of heads in query ({hq})")
    return kv.repeat_interleave(hq // hk, dim=-3)


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
    acg.Size([2, 2, 3])
    """
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % rows
    if max_norm is not None:
        _embedding_renorm_(weight, input, max_norm, norm_type)
    if sparse and weight._requires_grad and weight.grad_fn is None and is_grad_enabled():
        return _sparse_embedding(input, weight, -1 if padding_idx is None else padding_idx,
                                 scale_grad_by_freq)  # weight.grad: a sparse COO tensor
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


def _tuple(v: Any, n: int, name: str) -> list[int]:
    """An int or a sequence of n ints (PyTorch's _single/_pair/_triple)."""
    vals = [v] * n if isinstance(v, int) else list(v)
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values, but got {list(vals)}")
    return [int(x) for x in vals]


def _conv_padding(padding: Any, weight: Tensor, stride: list[int], dilation: list[int],
                  n: int) -> list[int]:
    """Explicit (lo, hi) pairs per spatial dim; "same" puts an odd extra pad on the right."""
    if isinstance(padding, str):
        if padding == "valid":
            return [0] * (2 * n)
        if padding != "same":
            raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                             f"{{'valid', 'same'}}")
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        pairs = []
        for i in range(n):
            total = dilation[i] * (weight.shape[2 + i] - 1)
            pairs += [total // 2, total - total // 2]
        return pairs
    return [p for v in _tuple(padding, n, "padding") for p in (v, v)]


def _convnd(n: int, input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any,
            padding: Any, dilation: Any, groups: int) -> Tensor:
    stride, dilation = _tuple(stride, n, "stride"), _tuple(dilation, n, "dilation")
    pad = _conv_padding(padding, weight, stride, dilation, n)
    unbatched = input.ndim == n + 1
    x = input.unsqueeze(0) if unbatched else input
    out = _conv.conv(x, weight, bias, stride, pad, dilation, groups)
    return out.squeeze(0) if unbatched else out


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """1-D convolution of input [N, C_in, L] (or [C_in, L]) with weight [C_out, C_in/groups, k];
    ``padding``: int, tuple, "valid" or "same"."""
    return _convnd(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """2-D convolution (cross-correlation, as PyTorch) of input [N, C_in, H, W] with weight
    [C_out, C_in/groups, kH, kW]; one op whose backward is two convolution ops.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.conv2d(acg.randn(2, 3, 8, 8), acg.randn(4, 3, 3, 3), padding="same").shape
    acg.Size([2, 4, 8, 8])
    """
    return _convnd(2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """3-D convolution of input [N, C_in, D, H, W]."""
    return _convnd(3, input, weight, bias, stride, padding, dilation, groups)


def _pool_args(kernel_size: Any, stride: Any, padding: Any) -> tuple[list, list, list]:
    k = _tuple(kernel_size, 2, "kernel_size")
    s = k if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _tuple(stride, 2, "stride")
    return k, s, _tuple(padding, 2, "padding")


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over each window of input [N, C, H, W] (or [C, H, W]); the gradient goes to the
    window's (first) maximum. ``return_indices``: also the flat H*W index of each maximum.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.max_pool2d(acg.arange(16.0).reshape(1, 4, 4), 2).tolist()
    [[[5.0, 7.0], [13.0, 15.0]]]
    """
    k, s, p = _pool_args(kernel_size, stride, padding)
    out, idx = _conv.max_pool2d(input, k, s, p, _tuple(dilation, 2, "dilation"), ceil_mode)
    return (out, idx) if return_indices else out


def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """Mean over each window; ``count_include_pad`` counts zero padding in the divisor."""
    k, s, p = _pool_args(kernel_size, stride, padding)
    return _conv.avg_pool2d(input, k, s, p, ceil_mode, count_include_pad, divisor_override)


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over PyTorch's adaptive bins giving ``output_size`` (int, pair; None keeps a dim)."""
    size = [output_size] * 2 if isinstance(output_size, int) or output_size is None \
        else list(output_size)
    size = [input.shape[-2 + i] if v is None else v for i, v in enumerate(size)]
    return _conv.adaptive_avg_pool2d(input, size)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) of input [N, C, ...], then scale and shift.

    Training: batch statistics (biased variance) normalise; ``running_mean``/``running_var``
    are updated in place without autograd (unbiased variance), as PyTorch. Eval: running stats.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> rm, rv = acg.zeros(2), acg.ones(2)
    >>> y = F.batch_norm(acg.tensor([[1.0, 2.0], [3.0, 6.0]]), rm, rv, training=True)
    >>> rm.tolist(), rv.tolist()
    ([0.20000000298023224, 0.4000000059604645], [1.100000023841858, 1.7000000476837158])
    """
    if training:
        per_channel = input.numel() // input.shape[1] if input.ndim > 1 else 1
        if per_channel == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {tuple(input.shape)}")
    out, mean, var = _nn.batch_norm(input, weight, bias, running_mean, running_var, training,
                                    momentum, eps)
    if training and running_mean is not None and running_var is not None:
        n = input.numel() // input.shape[1]
        with no_grad():
            running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
            unbiased = var.to(running_var.dtype) * (n / (n - 1))
            running_var.mul_(1 - momentum).add_(unbiased * momentum)
    return out


def _same_size(name: str, input: Tensor, target: Tensor) -> None:
    if not shapes_equal(input.shape, target.shape):
        raise ValueError(f"{name}: Using a target size ({tuple(target.shape)}) that is different "
                         f"to the input size ({tuple(input.shape)}) is deprecated. Please ensure "
                         f"they have the same size.")


def _l1_loss_core(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """Mean (or sum, or elementwise) absolute error; the gradient at equality is 0."""
    _check_reduction(reduction)
    return _losses.l1_loss(input, target, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (Huber divided by beta)."""
    reduction = resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    return _losses.smooth_l1_loss(input, target, reduction, beta)


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: Any = None, reduce: Any = None,
                         reduction: str = "mean") -> Tensor:
    """-w (t log x + (1 - t) log(1 - x)) on probabilities ``input``, logs clamped at -100."""
    reduction = resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    _same_size("binary_cross_entropy", input, target)
    return _losses.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     size_average: Any = None, reduce: Any = None,
                                     reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Sigmoid + binary cross entropy in one stable op; ``pos_weight`` scales positives.

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> round(F.binary_cross_entropy_with_logits(acg.tensor([0.0]), acg.tensor([1.0])).item(), 4)
    0.6931
    """
    reduction = resolve(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not shapes_equal(input.shape, target.shape):
        raise ValueError(f"Target size ({tuple(target.shape)}) must be the same as input size "
                         f"({tuple(input.shape)})")
    return _losses.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Any = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim`` (zero vectors stay zero, finite grads).

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.normalize(acg.tensor([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    if p == float("inf"):
        denom = input.abs().amax(dim, keepdim=True).clamp_min(eps)
    elif p == 2:  # clamp before the root: sqrt's gradient at 0 would be infinite
        denom = (input * input).sum(dim, keepdim=True).clamp_min(eps * eps).sqrt()
    else:
        denom = (input.abs() ** p).sum(dim, keepdim=True).clamp_min(eps ** p) ** (1.0 / p)
    return input / denom


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: float | None = None
        ) -> Tensor:
    """Pad the last len(pad)//2 dims, ``pad`` = (left_last, right_last, left_prev, ...);
    modes "constant" (``value``, negative pads crop), "reflect", "replicate", "circular".

    >>> import autograd_compile as acg
    >>> import autograd_compile.nn.functional as F
    >>> F.pad(acg.tensor([[1.0, 2.0, 3.0]]), (2, 1), mode="reflect").tolist()
    [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    """
    if mode != "constant" and value is not None and value != 0:
        raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    return _losses.pad(input, [int(v) for v in pad], mode, None if value is None else value)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding along a new last dim (``num_classes=-1``: max + 1, eager only).

    >>> import autograd_compile as acg
    >>> acg.nn.functional.one_hot(acg.tensor([1, 0]), 3).tolist()
    [[0, 1, 0], [1, 0, 0]]
    """
    from ..kernels.api_select import one_hot as _one_hot
    return _one_hot(tensor, num_classes)


__all__ += ["one_hot"]


# -- vision: transposed convolution, N-d pools, interpolation, pixel shuffle, fold/unfold --
from .functional_vision import *  # noqa: E402,F401,F403
from . import functional_vision as _functional_vision  # noqa: E402

__all__ += _functional_vision.__all__

# -- vision: affine_grid and grid_sample --
from .functional_grid import affine_grid, grid_sample  # noqa: E402,F401

__all__ += ["affine_grid", "grid_sample"]
# -- area actloss: activations, losses, distances, embedding_bag, channel_shuffle ---------------
from ._activation_functional import *  # noqa: E402,F401,F403
from ._activation_functional import __all__ as _actloss_activations  # noqa: E402
__all__ += _actloss_activations
from ._distance_functional import *  # noqa: E402,F401,F403
from ._distance_functional import __all__ as _actloss_distances  # noqa: E402
__all__ += _actloss_distances
from ._loss_functional import *  # noqa: E402,F401,F403
from ._loss_functional import __all__ as _actloss_losses  # noqa: E402
__all__ += _actloss_losses
# -- [xformer] norms and dropouts (nn/_functional_norm.py); mse/l1 broadcasting warnings ---------
from ._functional_norm import (alpha_dropout, dropout1d, dropout2d, dropout3d,  # noqa: E402
                               feature_alpha_dropout, group_norm, instance_norm,
                               local_response_norm)

__all__ += ["alpha_dropout", "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout",
            "group_norm", "instance_norm", "local_response_norm"]


def _warn_target_size(input: Tensor, target: Tensor) -> None:
    """PyTorch's warning when a target of another shape will broadcast against the input."""
    if tuple(target.shape) != tuple(input.shape):
        import warnings
        from .._types import Size
        warnings.warn(f"Using a target size ({Size(target.shape)!r}) that is different to the "
                      f"input size ({Size(input.shape)!r}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      stacklevel=3)


def _weighted(err: Tensor, input: Tensor, weight: Tensor, reduction: str) -> Tensor:
    """PyTorch's weighted mse/l1: "mean" divides by the summed weights, not the count."""
    if not shapes_equal(weight.shape, input.shape):
        raise ValueError("Weights and input must have the same size.")
    err = err * weight
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', "
                         f"'sum'.")
    return err if reduction == "none" else err.sum() / weight.sum() if reduction == "mean" \
        else err.sum()


def mse_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean (or sum, or elementwise) squared error; warns when the target broadcasts."""
    _warn_target_size(input, target)
    reduction = resolve(size_average, reduce, reduction)
    if weight is not None:
        return _weighted((input - target) ** 2, input, weight, reduction)
    _check_reduction(reduction)
    return _nn.mse_loss(input, target, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average: Any = None, reduce: Any = None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Mean (or sum, or elementwise) absolute error; warns when the target broadcasts."""
    _warn_target_size(input, target)
    reduction = resolve(size_average, reduce, reduction)
    if weight is not None:
        return _weighted((input - target).abs(), input, weight, reduction)
    return _l1_loss_core(input, target, reduction=reduction)
# multi_head_attention_forward runs nn.MultiheadAttention's code, which imports this module:
# nn/__init__.py installs it here once both exist (no import circle)
__all__ += ["multi_head_attention_forward"]
# -- tails: grouped_mm, scaled_mm, scaled_grouped_mm, ScalingType, SwizzleType --------------------
from ..kernels.api_tail_c import (ScalingType, SwizzleType, grouped_mm,  # noqa: E402,F401
                                  scaled_grouped_mm, scaled_mm)
__all__ += ["grouped_mm", "scaled_mm", "scaled_grouped_mm", "ScalingType", "SwizzleType"]
