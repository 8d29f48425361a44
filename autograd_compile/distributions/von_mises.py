"""PyTorch's path ``torch.distributions.von_mises``: the same classes as ``acg.distributions``."""
from . import VonMises  # noqa: F401

__all__ = ['VonMises']
