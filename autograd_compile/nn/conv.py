"""Convolutions: ``Conv1d/2d/3d`` over ``F.conv*d`` and ``ConvTranspose1d/2d/3d`` over
``F.conv_transpose*d``.

>>> import autograd_compile as acg
>>> acg.nn.Conv2d(3, 8, 3, padding=1)
Conv2d(3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))
"""
from __future__ import annotations

import math
from typing import Any

from ..tensor import Tensor
from . import functional as F
from . import init
from ._utils import empty_param, ntuple
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """Shared construction, initialisation and repr of the N-d convolutions."""

    _n = 0
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, dilation: Any = 1, groups: int = 1, bias: bool = True,
                 padding_mode: str = "zeros", device: Any = None, dtype: Any = None,
                 output_padding: Any = 0) -> None:
        super().__init__()
        n = self._n
        _check_conv_args(in_channels, out_channels, groups, padding, ntuple(stride, n),
                         padding_mode)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = ntuple(kernel_size, n), ntuple(stride, n)
        self.padding, self.dilation = ntuple(padding, n), ntuple(dilation, n)
        self.output_padding, self.transposed = ntuple(output_padding, n), self._transposed
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._pad_amounts()
        shape = (in_channels, out_channels // groups) if self.transposed \
            else (out_channels, in_channels // groups)  # PyTorch's layouts
        self.weight = empty_param(*shape, *self.kernel_size, dtype=dtype, device=device)
        if bias:
            self.bias = empty_param(out_channels, dtype=dtype, device=device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _pad_amounts(self) -> list[int]:
        """F.pad amounts (last dim first) for a non-zero padding_mode."""
        if isinstance(self.padding, str):
            out = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                out += [total // 2, total - total // 2]
            return out if self.padding == "same" else [0] * (2 * self._n)
        return [p for p in reversed(self.padding) for _ in range(2)]

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _conv(self, input: Tensor, fn: Any) -> Tensor:
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(padded, self.weight, self.bias, self.stride, (0,) * self._n,
                      self.dilation, self.groups)
        return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                  self.groups)

    def extra_repr(self) -> str:
        n = self._n
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


def _check_conv_args(in_channels: int, out_channels: int, groups: int, padding: Any,
                     stride: tuple, padding_mode: str) -> None:
    if groups <= 0:
        raise ValueError("groups must be a positive integer")
    if in_channels % groups != 0:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels % groups != 0:
        raise ValueError("out_channels must be divisible by groups")
    if isinstance(padding, str):
        if padding not in ("valid", "same"):
            raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                             "{'valid', 'same'}")
        if padding == "same" and any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"padding_mode must be one of {set(_PADDING_MODES)}, but got "
                         f"padding_mode='{padding_mode}'")


class Conv1d(_ConvNd):
    """1-D convolution over [N, C_in, L] (or unbatched [C_in, L]) inputs."""

    _n = 1

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input, F.conv1d)


class Conv2d(_ConvNd):
    """2-D convolution over [N, C_in, H, W] (or unbatched [C_in, H, W]) inputs."""

    _n = 2

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input, F.conv2d)


class Conv3d(_ConvNd):
    """3-D convolution over [N, C_in, D, H, W] (or unbatched [C_in, D, H, W]) inputs."""

    _n = 3

    def forward(self, input: Tensor) -> Tensor:
        return self._conv(input, F.conv3d)


class _ConvTransposeNd(_ConvNd):
    """Transposed convolution: weight [C_in, C_out/groups, *k]; ``output_size=`` in forward
    picks the output_padding that reaches that size (strided convolutions lose it)."""

    _transposed = True

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1,
                 padding: Any = 0, output_padding: Any = 0, groups: int = 1, bias: bool = True,
                 dilation: Any = 1, padding_mode: str = "zeros", device: Any = None,
                 dtype: Any = None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{self.__class__.__name__}')
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def _output_padding(self, input: Tensor, output_size: Any) -> list[int]:
        """PyTorch's rule: output_size (spatial, or with the leading dims) minus the smallest
        size reachable, checked to lie within one stride of it."""
        n = self._n
        if output_size is None:
            return list(self.output_padding)
        lead = 2 if input.ndim == n + 2 else 1
        size = [int(v) for v in output_size]
        if len(size) == lead + n:
            size = size[lead:]
        if len(size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must "
                             f"have {n} or {lead + n} elements (got {len(size)})")
        lo = [(input.shape[lead + d] - 1) * self.stride[d] - 2 * self.padding[d]
              + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        hi = [lo[d] + self.stride[d] - 1 for d in range(n)]
        if any(not lo[d] <= size[d] <= hi[d] for d in range(n)):
            raise ValueError(f"requested an output size of {size}, but valid sizes range from "
                             f"{lo} to {hi} (for an input of {list(input.shape[lead:])})")
        return [size[d] - lo[d] for d in range(n)]

    def _transpose(self, input: Tensor, output_size: Any, fn: Any) -> Tensor:
        return fn(input, self.weight, self.bias, self.stride, self.padding,
                  self._output_padding(input, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution over [N, C_in, L] inputs."""

    _n = 1

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return self._transpose(input, output_size, F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution ("deconvolution") over [N, C_in, H, W] inputs.

    >>> import autograd_compile as acg
    >>> up = acg.nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
    >>> up(acg.randn(1, 8, 5, 5)).shape
    acg.Size([1, 4, 10, 10])
    """

    _n = 2

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return self._transpose(input, output_size, F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution over [N, C_in, D, H, W] inputs."""

    _n = 3

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        return self._transpose(input, output_size, F.conv_transpose3d)
