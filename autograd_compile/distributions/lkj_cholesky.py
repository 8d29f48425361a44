"""PyTorch's path ``torch.distributions.lkj_cholesky``: the same classes as
``acg.distributions``."""
from . import LKJCholesky  # noqa: F401

__all__ = ['LKJCholesky']
