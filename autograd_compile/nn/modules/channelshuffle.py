"""PyTorch's path ``torch.nn.modules.channelshuffle``: the same classes as ``acg.nn``."""
from ..channelshuffle import ChannelShuffle  # noqa: F401

__all__ = ['ChannelShuffle']
