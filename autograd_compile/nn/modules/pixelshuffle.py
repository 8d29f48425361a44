"""PyTorch's path ``torch.nn.modules.pixelshuffle``: the same classes as ``acg.nn``."""
from ..pixelshuffle import PixelShuffle, PixelUnshuffle  # noqa: F401

__all__ = ['PixelShuffle', 'PixelUnshuffle']
