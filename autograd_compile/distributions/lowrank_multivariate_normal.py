"""PyTorch's path ``torch.distributions.lowrank_multivariate_normal``: the same classes as
``acg.distributions``."""
from . import LowRankMultivariateNormal  # noqa: F401

__all__ = ['LowRankMultivariateNormal']
