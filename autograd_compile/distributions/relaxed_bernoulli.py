"""PyTorch's path ``torch.distributions.relaxed_bernoulli``: the same classes as
``acg.distributions``."""
from . import LogitRelaxedBernoulli, RelaxedBernoulli  # noqa: F401

__all__ = ['LogitRelaxedBernoulli', 'RelaxedBernoulli']
