"""Normalisation layers: ``LayerNorm``, ``RMSNorm``, ``BatchNorm1d/2d/3d``, ``SyncBatchNorm``,
``GroupNorm``, ``InstanceNorm1d/2d/3d``, ``LocalResponseNorm``, ``CrossMapLRN2d``.

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

__all__ = ["LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm",
           "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LocalResponseNorm", "CrossMapLRN2d"]


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
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


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


class _NormBase(Module):
    """Parameters and running statistics shared by batch and instance norms (PyTorch's
    ``_NormBase``: ``weight``/``bias`` [C], buffers ``running_mean``, ``running_var``,
    ``num_batches_tracked``)."""

    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = empty_param(num_features, dtype=dtype, device=device)
            if bias:
                self.bias = empty_param(num_features, dtype=dtype, device=device)
            else:
                self.register_parameter("bias", None)
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
            if self.bias is not None:
                init.zeros_(self.bias)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """Batch statistics in training mode (updating the running ones), running ones in eval."""

    _expected: tuple[int, ...] = ()

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


class BatchNorm1d(_BatchNorm):
    """Batch norm over [N, C] or [N, C, L] inputs."""

    _expected = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over [N, C, H, W] inputs."""

    _expected = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch norm over [N, C, D, H, W] inputs."""

    _expected = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics are the whole global batch's. Under our data parallelism
    a batch is one (sharded) global array, so plain batch statistics already are the global
    ones: this is BatchNorm over [N, C, ...] inputs with PyTorch's name and checks."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True,
                 process_group: Any = None, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """Replace every BatchNorm*d in ``module`` by a SyncBatchNorm sharing its parameters
        and buffers (returns the converted module).

        >>> import autograd_compile as acg
        >>> net = acg.nn.Sequential(acg.nn.Linear(2, 3), acg.nn.BatchNorm1d(3))
        >>> type(acg.nn.SyncBatchNorm.convert_sync_batchnorm(net)[1]).__name__
        'SyncBatchNorm'
        """
        out = module
        if isinstance(module, _BatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class GroupNorm(Module):
    """Normalise groups of channels of [N, C, ...] (Wu & He, 2018); weight ones, bias zeros."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                      eps, affine)
        kw = {"dtype": dtype, "device": device}
        if affine:
            self.weight = empty_param(num_channels, **kw)
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = empty_param(num_channels, **kw)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(_NormBase):
    """Per-sample, per-channel statistics over the spatial dims (Ulyanov et al., 2016);
    running statistics only with ``track_running_stats`` (then used in eval)."""

    _no_batch_dim = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def _check_input_dim(self, input: Tensor) -> None:
        d = self._no_batch_dim
        if input.dim() not in (d, d + 1):
            raise ValueError(f"expected {d}D or {d + 1}D input (got {input.dim()}D input)")

    def _apply_instance_norm(self, input: Tensor) -> Tensor:
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight,
                               self.bias, self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.dim() - self._no_batch_dim
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            import warnings
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You "
                          "can silence this warning by not passing in num_features, which is "
                          "not used because affine=False", stacklevel=2)
        if input.dim() == self._no_batch_dim:
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over [N, C, L] (or unbatched [C, L])."""

    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over [N, C, H, W] (or unbatched [C, H, W])."""

    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over [N, C, D, H, W] (or unbatched [C, D, H, W])."""

    _no_batch_dim = 4


class LocalResponseNorm(Module):
    """Normalise each channel by its ``size`` neighbours' energy (Krizhevsky et al., 2012)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
                 ) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """The legacy (Lua Torch) cross-channel LRN over [N, C, H, W]. Its window is PyTorch's:
    ``(size - 1) // 2 + 1`` channels ahead, and, once past the first ones, channel 0 is
    never dropped from the running sum (PyTorch's loop does so; we keep its values)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1
                 ) -> None:
        super().__init__(size, alpha, beta, k)

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             "instead.")
        window = A.tensor(_cross_map_window(input.shape[1], self.size), dtype=input.dtype)
        energy = ((input * input).transpose(1, 3) @ window).transpose(1, 3)
        return input * (energy * (self.alpha / self.size) + self.k) ** (-self.beta)


def _cross_map_window(channels: int, size: int) -> Any:
    """M[j, c] = 1 where channel j is in channel c's sum, following PyTorch's loop."""
    import numpy as np
    pre = int((size - 1) / 2 + 1)
    m = np.zeros((channels, channels))
    m[:min(pre, channels), 0] = 1
    for c in range(1, channels):
        m[:, c] = m[:, c - 1]
        if c < channels - pre + 1:
            m[c + pre - 1, c] += 1
        if c > pre:
            m[c - pre, c] -= 1
    return m
