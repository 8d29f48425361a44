"""PyTorch's path ``torch.distributions.logistic_normal``: the same classes as
``acg.distributions``."""
from . import LogisticNormal  # noqa: F401

__all__ = ['LogisticNormal']
