"""PyTorch's path ``torch.distributions.gamma``: the same classes as ``acg.distributions``."""
from . import Gamma  # noqa: F401

__all__ = ['Gamma']
