"""PyTorch's path ``torch.distributions.gumbel``: the same classes as ``acg.distributions``."""
from . import Gumbel  # noqa: F401

__all__ = ['Gumbel']
