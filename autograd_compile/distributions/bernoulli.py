"""PyTorch's path ``torch.distributions.bernoulli``: the same classes as ``acg.distributions``."""
from . import Bernoulli  # noqa: F401

__all__ = ['Bernoulli']
