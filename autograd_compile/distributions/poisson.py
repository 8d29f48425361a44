"""PyTorch's path ``torch.distributions.poisson``: the same classes as ``acg.distributions``."""
from . import Poisson  # noqa: F401

__all__ = ['Poisson']
