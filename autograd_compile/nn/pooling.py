"""Pooling: max, average, adaptive, LP, fractional pools in 1-3 dims, and max unpooling.

>>> import autograd_compile as acg
>>> acg.nn.MaxPool2d(2)
MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
"""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F
from ._utils import ntuple
from .module import Module

__all__ = ["MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "MaxPool1d", "MaxPool3d", "AvgPool1d",
           "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d"]


class MaxPool2d(Module):
    """Max over ``kernel_size`` windows (``stride`` defaults to ``kernel_size``)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor) -> Any:
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """Mean over ``kernel_size`` windows (``stride`` defaults to ``kernel_size``)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True,
                 divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool2d(Module):
    """Mean pooling to a fixed ``output_size`` (an int, or a pair; None keeps that dim)."""

    def __init__(self, output_size: Any) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class MaxPool1d(MaxPool2d):
    """Max over ``kernel_size`` windows of [N, C, L] inputs."""

    def forward(self, input: Tensor) -> Any:
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class MaxPool3d(MaxPool2d):
    """Max over ``kernel_size`` windows of [N, C, D, H, W] inputs."""

    def forward(self, input: Tensor) -> Any:
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            ceil_mode=self.ceil_mode, return_indices=self.return_indices)


class AvgPool1d(Module):
    """Mean over ``kernel_size`` windows of [N, C, L] inputs (sizes kept as 1-tuples)."""

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0,
                 ceil_mode: bool = False, count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = ntuple(kernel_size, 1)
        self.stride = ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = ntuple(padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    """Mean over ``kernel_size`` windows of [N, C, D, H, W] inputs."""

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)


class AdaptiveAvgPool1d(AdaptiveAvgPool2d):
    """Mean pooling of [N, C, L] to ``output_size`` positions."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    """Mean pooling of [N, C, D, H, W] to ``output_size`` (None keeps a dim)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class _AdaptiveMaxPoolNd(Module):
    """Max pooling over PyTorch's adaptive bins; ``return_indices`` adds the argmax indices."""

    _fn: Any = None

    def __init__(self, output_size: Any, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input: Tensor) -> Any:
        return type(self)._fn(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """Adaptive max pooling of [N, C, L]."""

    _fn = F.adaptive_max_pool1d


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """Adaptive max pooling of [N, C, H, W]."""

    _fn = F.adaptive_max_pool2d


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """Adaptive max pooling of [N, C, D, H, W]."""

    _fn = F.adaptive_max_pool3d


class _LPPoolNd(Module):
    """Power-average pooling: (sum over the window of x^p)^(1/p)."""

    _fn: Any = None

    def __init__(self, norm_type: float, kernel_size: Any, stride: Any = None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                              self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """LP pooling of [N, C, L]."""

    _fn = F.lp_pool1d


class LPPool2d(_LPPoolNd):
    """LP pooling of [N, C, H, W]."""

    _fn = F.lp_pool2d


class LPPool3d(_LPPoolNd):
    """LP pooling of [N, C, D, H, W]."""

    _fn = F.lp_pool3d


class _MaxUnpoolNd(Module):
    """Partial inverse of a max pool: values back at their indices, zeros elsewhere."""

    _n = 0
    _fn: Any = None

    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        n = self._n
        self.kernel_size = ntuple(kernel_size, n)
        self.stride = ntuple(stride if stride is not None else kernel_size, n)
        self.padding = ntuple(padding, n)

    def forward(self, input: Tensor, indices: Tensor, output_size: Any = None) -> Tensor:
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Inverse of MaxPool1d (given its indices)."""

    _n, _fn = 1, F.max_unpool1d


class MaxUnpool2d(_MaxUnpoolNd):
    """Inverse of MaxPool2d (given its indices)."""

    _n, _fn = 2, F.max_unpool2d


class MaxUnpool3d(_MaxUnpoolNd):
    """Inverse of MaxPool3d (given its indices)."""

    _n, _fn = 3, F.max_unpool3d


class _FractionalMaxPoolNd(Module):
    """Fractional max pooling to ``output_size`` or ``output_ratio`` of the input; fresh
    random window offsets per call (``acg.manual_seed`` makes them reproducible)."""

    _n = 0
    _fn: Any = None

    def __init__(self, kernel_size: Any, output_size: Any = None, output_ratio: Any = None,
                 return_indices: bool = False, _random_samples: Any = None) -> None:
        super().__init__()
        n, name = self._n, type(self).__name__
        self.kernel_size = ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             f"ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor) -> Any:
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                              self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of [N, C, H, W]."""

    _n, _fn = 2, F.fractional_max_pool2d


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of [N, C, D, H, W]."""

    _n, _fn = 3, F.fractional_max_pool3d
