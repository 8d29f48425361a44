"""Normalisation layers: ``LayerNorm``, ``RMSNorm``, ``BatchNorm1d``, ``BatchNorm2d``.

>>> import autograd_compile as acg
>>> bn = acg.nn.BatchNorm1d(3)
>>> _ = bn(acg.randn(8, 3)); int(bn.num_batches_tracked.item()), sorted(bn.state_dict())
(1, ['bias', 'num_batches_tracked', 'running_mean', 'running_var', 'weight'])
"""
from __future__ import annotations

from typing import Any, Sequence

from ..kernels import api as A
from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import empty_param
from .module import Module

__all__ = ["LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d"]


def _shape(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims; weight ones, bias zeros."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = empty_param(*self.normalized_shape, dtype=dtype, device=device)
            if bias:
                self.bias = empty_param(*self.normalized_shape, dtype=dtype, device=device)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims (``eps=None``: the
    dtype's machine epsilon, as in PyTorch)."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None
                 ) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = empty_param(*self.normalized_shape, dtype=dtype, device=device)
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class _BatchNorm(Module):
    """Batch statistics in training mode (updating the running ones), running ones in eval."""

    _version = 2
    _expected: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = empty_param(num_features, dtype=dtype, device=device)
            self.bias = empty_param(num_features, dtype=dtype, device=device)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", A.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", A.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", A.tensor(0, dtype="int64"))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in self._expected:
            names = " or ".join(f"{d}D" for d in self._expected)
            raise ValueError(f"expected {names} input (got {input.dim()}D input)")

    def _average_factor(self) -> float:
        """The running-statistics momentum of this call (``momentum=None``: 1/n, the
        cumulative average)."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        return factor

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = self._average_factor()
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        keep = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if keep else None,
                            self.running_var if keep else None, self.weight, self.bias,
                            use_batch, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over [N, C] or [N, C, L] inputs."""

    _expected = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over [N, C, H, W] inputs."""

    _expected = (4,)
