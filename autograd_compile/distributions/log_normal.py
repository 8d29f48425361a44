"""PyTorch's path ``torch.distributions.log_normal``: the same classes as ``acg.distributions``."""
from . import LogNormal  # noqa: F401

__all__ = ['LogNormal']
