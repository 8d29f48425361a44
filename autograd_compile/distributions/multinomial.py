"""PyTorch's path ``torch.distributions.multinomial``: the same classes as ``acg.distributions``."""
from . import Multinomial  # noqa: F401

__all__ = ['Multinomial']
