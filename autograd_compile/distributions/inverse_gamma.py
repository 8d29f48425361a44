"""PyTorch's path ``torch.distributions.inverse_gamma``: the same classes as
``acg.distributions``."""
from . import InverseGamma  # noqa: F401

__all__ = ['InverseGamma']
