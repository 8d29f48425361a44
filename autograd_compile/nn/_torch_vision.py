"""The vision functions PyTorch also exposes at top level (``torch.conv2d``,
``torch.max_pool1d``, ``torch.pixel_shuffle``, ``torch.grid_sampler``...), over
``nn.functional`` with the top-level signatures: ``stride=[]`` means the kernel size,
``torch.adaptive_max_pool1d`` returns (values, indices), ``torch.grid_sampler`` takes PyTorch's
integer mode codes, ``torch.convolution`` takes every argument.

>>> import autograd_compile as acg
>>> acg.max_pool1d(acg.arange(6.0).reshape(1, 1, 6), 2).tolist()
[[[1.0, 3.0, 5.0]]]
"""
from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "convolution", "max_pool1d", "max_pool1d_with_indices",
           "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d",
           "adaptive_max_pool1d", "pixel_shuffle", "pixel_unshuffle", "grid_sampler",
           "grid_sampler_2d", "grid_sampler_3d"]

conv1d, conv2d, conv3d = F.conv1d, F.conv2d, F.conv3d
conv_transpose1d, conv_transpose2d, conv_transpose3d = (F.conv_transpose1d, F.conv_transpose2d,
                                                        F.conv_transpose3d)
pixel_shuffle, pixel_unshuffle = F.pixel_shuffle, F.pixel_unshuffle
adaptive_avg_pool1d = F.adaptive_avg_pool1d


def _stride(stride: Any) -> Any:
    """Top-level pools default ``stride=[]``: the kernel size, as None is in F."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else stride


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any,
                dilation: Any, transposed: bool, output_padding: Any, groups: int) -> Tensor:
    """N-d (transposed) convolution, N from the weight's rank.

    >>> import autograd_compile as acg
    >>> acg.convolution(acg.ones(1, 1, 3), acg.ones(1, 1, 2), None, [1], [0], [1], False, [0],
    ...                 1).tolist()
    [[[2.0, 2.0]]]
    """
    n = weight.ndim - 2
    if n not in (1, 2, 3):
        raise RuntimeError(f"convolution: expected a 3-D, 4-D or 5-D weight, got weight of size "
                           f"{list(weight.shape)}")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[n - 1]
    return fn(input, weight, bias, stride, padding, dilation, groups)


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = (),
                            padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    return F.max_pool1d_with_indices(input, kernel_size, _stride(stride), padding, dilation,
                                     ceil_mode)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,
               dilation: Any = 1, ceil_mode: bool = False) -> Tensor:
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                        count_include_pad)


def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """(values, indices), as ``torch.adaptive_max_pool1d`` returns both."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDINGS = ("zeros", "border", "reflection")


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """``F.grid_sample`` with PyTorch's integer codes: mode 0 bilinear, 1 nearest, 2 bicubic;
    padding 0 zeros, 1 border, 2 reflection."""
    if interpolation_mode not in (0, 1, 2) or padding_mode not in (0, 1, 2):
        raise RuntimeError(f"grid_sampler(): expected interpolation_mode and padding_mode in "
                           f"0, 1, 2, but got {interpolation_mode} and {padding_mode}")
    return F.grid_sample(input, grid, _GRID_MODES[interpolation_mode],
                         _GRID_PADDINGS[padding_mode], bool(align_corners))


def grid_sampler_2d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    if input.ndim != 4:
        raise RuntimeError(f"grid_sampler_2d(): expected 4D input, but got input with sizes "
                           f"{list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> Tensor:
    if input.ndim != 5:
        raise RuntimeError(f"grid_sampler_3d(): expected 5D input, but got input with sizes "
                           f"{list(input.shape)}")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)
