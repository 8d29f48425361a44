"""PyTorch's path ``torch.nn.modules.normalization``: the same classes as ``acg.nn``."""
from ..norm import CrossMapLRN2d, GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm  # noqa: F401

__all__ = ['CrossMapLRN2d', 'GroupNorm', 'LayerNorm', 'LocalResponseNorm', 'RMSNorm']
