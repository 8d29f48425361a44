"""PyTorch's path ``torch.nn.modules.linear_cross_entropy_options``."""
from .._adaptive import LinearCrossEntropyOptions  # noqa: F401

__all__ = ['LinearCrossEntropyOptions']
