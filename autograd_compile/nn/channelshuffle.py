"""``ChannelShuffle``: regroups the channels of [N, C, *] (ShuffleNet).

>>> import autograd_compile as acg
>>> acg.nn.ChannelShuffle(2)(acg.arange(4.0).reshape(1, 4, 1)).flatten().tolist()
[0.0, 2.0, 1.0, 3.0]
"""
from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["ChannelShuffle"]


class ChannelShuffle(Module):
    """[N, g, C/g, *] -> [N, C/g, g, *] on the channel dim."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"
