"""PyTorch's path ``torch.distributions.independent``: the same classes as ``acg.distributions``."""
from . import Independent  # noqa: F401

__all__ = ['Independent']
