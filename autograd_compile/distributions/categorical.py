"""PyTorch's path ``torch.distributions.categorical``: the same classes as ``acg.distributions``."""
from . import Categorical  # noqa: F401

__all__ = ['Categorical']
