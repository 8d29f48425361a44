"""PyTorch's path ``torch.distributions.relaxed_categorical``: the same classes as
``acg.distributions``."""
from . import ExpRelaxedCategorical, RelaxedOneHotCategorical  # noqa: F401

__all__ = ['ExpRelaxedCategorical', 'RelaxedOneHotCategorical']
