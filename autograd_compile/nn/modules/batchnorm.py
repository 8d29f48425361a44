"""PyTorch's path ``torch.nn.modules.batchnorm``: the same classes as ``acg.nn``."""
from ..lazy import LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d  # noqa: F401
from ..norm import BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm  # noqa: F401

__all__ = [
    'BatchNorm1d', 'BatchNorm2d', 'BatchNorm3d', 'LazyBatchNorm1d', 'LazyBatchNorm2d',
    'LazyBatchNorm3d', 'SyncBatchNorm',
]
from ..norm import _NormBase, _BatchNorm  # noqa: E402,F401  (base classes)
