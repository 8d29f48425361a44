"""PyTorch's path ``torch.distributions.continuous_bernoulli``: the same classes as
``acg.distributions``."""
from . import ContinuousBernoulli  # noqa: F401

__all__ = ['ContinuousBernoulli']
