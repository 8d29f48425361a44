"""PyTorch's path ``torch.distributions.uniform``: the same classes as ``acg.distributions``."""
from . import Uniform  # noqa: F401

__all__ = ['Uniform']
