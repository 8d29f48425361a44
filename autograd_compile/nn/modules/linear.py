"""PyTorch's path ``torch.nn.modules.linear``: the same classes as ``acg.nn``."""
from ..bilinear import Bilinear  # noqa: F401
from ..lazy import LazyLinear  # noqa: F401
from ..linear import Identity, Linear  # noqa: F401

__all__ = ['Bilinear', 'Identity', 'LazyLinear', 'Linear']
