"""PyTorch's path ``torch.distributions.exponential``: the same classes as ``acg.distributions``."""
from . import Exponential  # noqa: F401

__all__ = ['Exponential']
