"""PyTorch's path ``torch.nn.modules.fold``: the same classes as ``acg.nn``."""
from ..fold import Fold, Unfold  # noqa: F401

__all__ = ['Fold', 'Unfold']
