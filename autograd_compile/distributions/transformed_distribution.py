"""PyTorch's path ``torch.distributions.transformed_distribution``: the same classes as
``acg.distributions``."""
from . import TransformedDistribution  # noqa: F401

__all__ = ['TransformedDistribution']
