"""PyTorch's path ``torch.distributions.one_hot_categorical``: the same classes as
``acg.distributions``."""
from . import OneHotCategorical, OneHotCategoricalStraightThrough  # noqa: F401

__all__ = ['OneHotCategorical', 'OneHotCategoricalStraightThrough']
