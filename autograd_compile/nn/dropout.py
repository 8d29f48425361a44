"""Dropouts: ``Dropout``, channel-wise ``Dropout1d/2d/3d``, ``AlphaDropout`` and
``FeatureAlphaDropout``; random in training mode, the identity in eval.

>>> import autograd_compile as acg
>>> d = acg.nn.Dropout(0.5).eval()
>>> d, bool((d(acg.ones(4)) == 1).all())
(Dropout(p=0.5, inplace=False), True)
"""
from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    """``p`` and ``inplace`` with PyTorch's check and repr."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training mode (scaling the rest by
    1/(1-p)); the identity in eval mode. Fresh randomness each call from the global seed."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Zero whole channels of [N, C, L] (or [C, L]) with probability ``p``, scaling the
    rest by 1/(1-p), in training mode."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Zero whole channels of [N, C, H, W] (Tompson et al., 2015)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Zero whole channels of [N, C, D, H, W] (or [C, D, H, W])."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps zero mean and unit variance (Klambauer et al., 2017)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels of [N, C, ...]."""

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training)
