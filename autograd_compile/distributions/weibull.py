"""PyTorch's path ``torch.distributions.weibull``: the same classes as ``acg.distributions``."""
from . import Weibull  # noqa: F401

__all__ = ['Weibull']
