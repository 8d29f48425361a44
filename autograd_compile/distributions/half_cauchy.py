"""PyTorch's path ``torch.distributions.half_cauchy``: the same classes as ``acg.distributions``."""
from . import HalfCauchy  # noqa: F401

__all__ = ['HalfCauchy']
