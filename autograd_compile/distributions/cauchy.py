"""PyTorch's path ``torch.distributions.cauchy``: the same classes as ``acg.distributions``."""
from . import Cauchy  # noqa: F401

__all__ = ['Cauchy']
