"""PyTorch's path ``torch.distributions.laplace``: the same classes as ``acg.distributions``."""
from . import Laplace  # noqa: F401

__all__ = ['Laplace']
