"""PyTorch's path ``torch.distributions.beta``: the same classes as ``acg.distributions``."""
from . import Beta  # noqa: F401

__all__ = ['Beta']
