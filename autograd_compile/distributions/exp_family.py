"""PyTorch's path ``torch.distributions.exp_family``: the same classes as ``acg.distributions``."""
from . import ExponentialFamily  # noqa: F401

__all__ = ['ExponentialFamily']
