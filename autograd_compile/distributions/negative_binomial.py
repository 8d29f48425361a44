"""PyTorch's path ``torch.distributions.negative_binomial``: the same classes as
``acg.distributions``."""
from . import NegativeBinomial  # noqa: F401

__all__ = ['NegativeBinomial']
