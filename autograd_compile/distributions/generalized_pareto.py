"""PyTorch's path ``torch.distributions.generalized_pareto``: the same classes as
``acg.distributions``."""
from . import GeneralizedPareto  # noqa: F401

__all__ = ['GeneralizedPareto']
