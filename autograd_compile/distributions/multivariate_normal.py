"""PyTorch's path ``torch.distributions.multivariate_normal``: the same classes as
``acg.distributions``."""
from . import MultivariateNormal  # noqa: F401

__all__ = ['MultivariateNormal']
