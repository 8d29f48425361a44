"""``PixelShuffle`` and ``PixelUnshuffle``: channels to space and back (sub-pixel convolution).

>>> import autograd_compile as acg
>>> acg.nn.PixelShuffle(2)(acg.randn(1, 8, 3, 3)).shape
acg.Size([1, 2, 6, 6])
"""
from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle"]


class PixelShuffle(Module):
    """[*, C*r*r, H, W] -> [*, C, H*r, W*r]."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """[*, C, H*r, W*r] -> [*, C*r*r, H, W]."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"
