"""PyTorch's path ``torch.distributions.fishersnedecor``: the same classes as
``acg.distributions``."""
from . import FisherSnedecor  # noqa: F401

__all__ = ['FisherSnedecor']
