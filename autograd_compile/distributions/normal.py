"""PyTorch's path ``torch.distributions.normal``: the same classes as ``acg.distributions``."""
from . import Normal  # noqa: F401

__all__ = ['Normal']
