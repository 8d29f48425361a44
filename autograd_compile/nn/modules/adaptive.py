"""PyTorch's path ``torch.nn.modules.adaptive``: the same classes as ``acg.nn``."""
from .._adaptive import AdaptiveLogSoftmaxWithLoss  # noqa: F401

__all__ = ['AdaptiveLogSoftmaxWithLoss']
