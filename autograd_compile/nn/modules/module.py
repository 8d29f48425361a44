"""PyTorch's path ``torch.nn.modules.module``: the same classes as ``acg.nn``."""
from ..module import Module  # noqa: F401

__all__ = ['Module']
from ..module import _IncompatibleKeys  # noqa: E402,F401  (base classes)
