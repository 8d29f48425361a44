"""PyTorch's path ``torch.distributions.half_normal``: the same classes as ``acg.distributions``."""
from . import HalfNormal  # noqa: F401

__all__ = ['HalfNormal']
