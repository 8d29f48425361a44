"""PyTorch's path ``torch.nn.modules.flatten``: the same classes as ``acg.nn``."""
from ..flatten import Flatten, Unflatten  # noqa: F401

__all__ = ['Flatten', 'Unflatten']
