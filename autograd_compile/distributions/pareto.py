"""PyTorch's path ``torch.distributions.pareto``: the same classes as ``acg.distributions``."""
from . import Pareto  # noqa: F401

__all__ = ['Pareto']
