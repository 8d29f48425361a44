"""PyTorch's path ``torch.distributions.wishart``: the same classes as ``acg.distributions``."""
from . import Wishart  # noqa: F401

__all__ = ['Wishart']
