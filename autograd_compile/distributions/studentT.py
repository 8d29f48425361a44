"""PyTorch's path ``torch.distributions.studentT``: the same classes as ``acg.distributions``."""
from . import StudentT  # noqa: F401

__all__ = ['StudentT']
