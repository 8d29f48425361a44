"""PyTorch's path ``torch.nn.modules.conv``: the same classes as ``acg.nn``."""
from ..conv import (  # noqa: F401
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
from ..lazy import (  # noqa: F401
    LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d, LazyConvTranspose2d,
    LazyConvTranspose3d)

__all__ = [
    'Conv1d', 'Conv2d', 'Conv3d', 'ConvTranspose1d', 'ConvTranspose2d', 'ConvTranspose3d',
    'LazyConv1d', 'LazyConv2d', 'LazyConv3d', 'LazyConvTranspose1d', 'LazyConvTranspose2d',
    'LazyConvTranspose3d',
]
from ..conv import _ConvNd, _ConvTransposeNd  # noqa: E402,F401  (base classes)
