"""PyTorch's path ``torch.nn.modules.instancenorm``: the same classes as ``acg.nn``."""
from ..lazy import LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d  # noqa: F401
from ..norm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d  # noqa: F401

__all__ = [
    'InstanceNorm1d', 'InstanceNorm2d', 'InstanceNorm3d', 'LazyInstanceNorm1d',
    'LazyInstanceNorm2d', 'LazyInstanceNorm3d',
]
from ..norm import _InstanceNorm  # noqa: E402,F401  (base classes)
