"""PyTorch's path ``torch.distributions.kumaraswamy``: the same classes as ``acg.distributions``."""
from . import Kumaraswamy  # noqa: F401

__all__ = ['Kumaraswamy']
