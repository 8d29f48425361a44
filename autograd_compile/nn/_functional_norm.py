"""``nn.functional``'s group/instance/local-response norms and the channel-wise and alpha
dropouts, each a composition of existing ops (so autograd and every mode come for free).

>>> import autograd_compile as acg
>>> import autograd_compile.nn.functional as F
>>> y = F.group_norm(acg.randn(2, 4, 3), 2)
>>> [round(v, 4) for v in y.reshape(2, 2, 6).mean(-1).flatten().tolist()]
[0.0, 0.0, 0.0, 0.0]
"""
from __future__ import annotations

import math
import warnings
from typing import Any

from ..autograd.grad_mode import no_grad
from ..kernels import api as A
from ..tensor import Tensor

__all__ = ["group_norm", "instance_norm", "local_response_norm", "dropout1d", "dropout2d",
           "dropout3d", "alpha_dropout", "feature_alpha_dropout"]


def _channel_shape(x: Tensor) -> list[int]:
    """[1, C, 1, ...]: a per-channel vector broadcast against ``x`` [N, C, ...]."""
    return [1, x.shape[1]] + [1] * (x.dim() - 2)


def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    if weight is not None:
        y = y * weight.reshape(_channel_shape(y))
    if bias is not None:
        y = y + bias.reshape(_channel_shape(y))
    return y


def _in_float32(x: Tensor) -> Tensor:
    """A half-precision input computed in float32 (statistics and affine, then one rounding
    back), as PyTorch's norm kernels; float32 parameters on a bf16 input are its mixed types."""
    return x.float() if x.dtype in (A.bfloat16, A.float16) else x


def _normalize(x: Tensor, dims: list[int], eps: float) -> tuple[Tensor, Tensor, Tensor]:
    """(x - mean) / sqrt(var + eps) over ``dims`` (biased variance); also mean and var."""
    mean = x.mean(dim=dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
    return (x - mean) * (var + eps).rsqrt(), mean, var


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise each group of ``C // num_groups`` channels of [N, C, ...] (with its
    spatial dims) by its own mean and biased variance, then scale and shift per channel.

    >>> import autograd_compile as acg
    >>> acg.nn.functional.group_norm(acg.tensor([[1.0, 3.0]]), 1).tolist()
    [[-0.9999950528144836, 0.9999950528144836]]
    """
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups != 0:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    if n * c // num_groups * math.prod(input.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {list(input.shape)}")
    x = _in_float32(input)
    y, _, _ = _normalize(x.reshape(n, num_groups, -1), [2], eps)
    return _affine(y.reshape(input.shape), weight, bias).to(input.dtype)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel of each sample of [N, C, ...] over its spatial dims.

    With ``use_input_stats`` the running statistics (when given) move toward the batch
    average of the per-instance mean and unbiased variance, as PyTorch's; without it the
    running statistics normalise.
    """
    spatial = list(range(2, input.dim()))
    x = _in_float32(input)
    if not use_input_stats:
        shape = _channel_shape(input)
        y = (x - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
        return _affine(y, weight, bias).to(input.dtype)
    count = math.prod(input.shape[2:])
    if count == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{list(input.shape)}")
    y, mean, var = _normalize(x, spatial, eps)
    if running_mean is not None and running_var is not None:
        with no_grad():  # as batch_norm: the running stats are not on the tape
            m = mean.detach().reshape(input.shape[0], input.shape[1]).mean(0)
            v = var.detach().reshape(input.shape[0], input.shape[1]).mean(0) * (count / (count - 1))
            running_mean.mul_(1 - momentum).add_(m.to(running_mean.dtype) * momentum)
            running_var.mul_(1 - momentum).add_(v.to(running_var.dtype) * momentum)
    return _affine(y, weight, bias).to(input.dtype)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta (the window
    is zero-padded; the mean divides by ``size``, as PyTorch's average pooling does)."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    c = input.shape[1]
    sq = input * input
    pad_front, pad_back = size // 2, (size - 1) // 2
    padded = _pad_channels(sq, pad_front, pad_back)
    window = padded.narrow(1, 0, c)
    for j in range(1, size):
        window = window + padded.narrow(1, j, c)
    div = (window * (alpha / size) + k) ** beta
    return input / div


def _pad_channels(x: Tensor, front: int, back: int) -> Tensor:
    """Zero rows before and after dim 1."""
    parts = []
    if front:
        parts.append(A.zeros(x.shape[0], front, *x.shape[2:], dtype=x.dtype))
    parts.append(x)
    if back:
        parts.append(A.zeros(x.shape[0], back, *x.shape[2:], dtype=x.dtype))
    return A.cat(parts, dim=1) if len(parts) > 1 else x


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input: Tensor, p: float, feature: bool) -> Tensor:
    """1.0 where kept (probability 1 - p), shaped like ``input`` or, feature-wise, [N, C, 1...]."""
    if feature and input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = list(input.shape[:2]) + [1] * (input.dim() - 2) if feature else list(input.shape)
    return (A.rand(shape, dtype=input.dtype) >= p).to(input.dtype)


def _write(input: Tensor, out: Tensor, inplace: bool) -> Tensor:
    return input.copy_(out) if inplace else out


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return _write(input, input * 0.0, inplace)
    mask = _keep_mask(input, p, feature=True) * (1.0 / (1.0 - p))
    return _write(input, input * mask, inplace)


def _alpha_dropout(input: Tensor, p: float, training: bool, inplace: bool, feature: bool
                   ) -> Tensor:
    """SELU-preserving dropout: dropped units take SELU's negative saturation, then an
    affine map restores zero mean and unit variance (Klambauer et al., 2017)."""
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return _write(input, input * 0.0, inplace)
    alpha = 1.7580993408473766  # -SELU(-inf) = scale * alpha
    a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
    keep = _keep_mask(input, p, feature)
    b = (keep - 1.0) * (alpha * a) + alpha * a * p
    return _write(input, input * (keep * a) + b, inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
              ) -> Tensor:
    """Zero whole channels of [N, C, L] (or unbatched [C, L]) with probability ``p``."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. Note "
            "that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
            "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D "
            "inputs).")
    return _unbatched(input, 3, p, training, inplace)


def _unbatched(input: Tensor, batched_dim: int, p: float, training: bool, inplace: bool
               ) -> Tensor:
    """Feature dropout of an input that may lack its batch dim (then one is added)."""
    if input.dim() == batched_dim:
        return _feature_dropout(input, p, training, inplace)
    out = _feature_dropout(input.unsqueeze(0), p, training, False).squeeze(0)
    return _write(input, out, inplace) if inplace and out is not input else out


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
              ) -> Tensor:
    """Zero whole channels of [N, C, H, W] with probability ``p`` (a 3-D input is taken as
    [N, C, L], with PyTorch's warning)."""
    _check_p(p)
    d = input.dim()
    if d not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {d}-D input to dropout2d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout2d exists to provide "
            "channel-wise dropout on inputs with 2 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if d == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
            "dropout behavior is desired - input is interpreted as shape (N, C, L), where C is "
            "the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
              ) -> Tensor:
    """Zero whole channels of [N, C, D, H, W] (or unbatched [C, D, H, W])."""
    _check_p(p)
    d = input.dim()
    if d not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {d}-D input to dropout3d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, "
            "and an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    return _unbatched(input, 5, p, training, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False
                  ) -> Tensor:
    """Dropout that keeps SELU activations' mean and variance (note ``training=False`` by
    default, as PyTorch's)."""
    _check_p(p)
    return _alpha_dropout(input, p, training, inplace, feature=False)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels of [N, C, ...]."""
    _check_p(p)
    return _alpha_dropout(input, p, training, inplace, feature=True)
