"""PyTorch's path ``torch.distributions.geometric``: the same classes as ``acg.distributions``."""
from . import Geometric  # noqa: F401

__all__ = ['Geometric']
