"""PyTorch's path ``torch.nn.modules.lazy``: the same classes as ``acg.nn``."""
from ..lazy import LazyModuleMixin  # noqa: F401

__all__ = ['LazyModuleMixin']
