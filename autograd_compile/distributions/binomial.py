"""PyTorch's path ``torch.distributions.binomial``: the same classes as ``acg.distributions``."""
from . import Binomial  # noqa: F401

__all__ = ['Binomial']
