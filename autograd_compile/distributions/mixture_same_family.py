"""PyTorch's path ``torch.distributions.mixture_same_family``: the same classes as
``acg.distributions``."""
from . import MixtureSameFamily  # noqa: F401

__all__ = ['MixtureSameFamily']
