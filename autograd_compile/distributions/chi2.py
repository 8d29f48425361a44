"""PyTorch's path ``torch.distributions.chi2``: the same classes as ``acg.distributions``."""
from . import Chi2  # noqa: F401

__all__ = ['Chi2']
