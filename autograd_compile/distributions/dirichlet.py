"""The Dirichlet distribution, in its own module: ``Beta`` (continuous.py) is held by a
two-category Dirichlet and the multivariate families build on both, so each imports it from
here and neither imports the other back."""
from __future__ import annotations

from typing import Any

import autograd_compile as acg
from autograd_compile.kernels import special_dist as S
from autograd_compile.tensor import Tensor

from . import constraints
from .distribution import ExponentialFamily, _Validating
from .utils import digamma, key, lgamma, xlogy

__all__ = ["Dirichlet"]


class Dirichlet(ExponentialFamily, _Validating):
    """Dirichlet distribution on the simplex with ``concentration`` (event shape ``(K,)``);
    draws are normalised gammas (reparameterised)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(tuple(concentration.shape[:-1]), tuple(concentration.shape[-1:]),
                         validate_args=validate_args)

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        gammas = S.dist_gamma_sample(self.concentration.expand(shape), key())
        out = gammas / gammas.sum(-1, keepdim=True)
        info = acg.finfo(out.dtype)
        return out.clamp(min=info.tiny, max=1 - info.eps)

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        c = self.concentration
        return xlogy(c - 1.0, value).sum(-1) + lgamma(c.sum(-1)) - lgamma(c).sum(-1)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self) -> Tensor:
        c = self.concentration
        mode = (c - 1).clamp(min=0.0)
        mode = mode / mode.sum(-1, keepdim=True)
        # all concentrations below one: the mass piles on the largest one's corner
        corner = acg.nn.functional.one_hot(c.argmax(-1), c.shape[-1]).to(mode.dtype)
        return acg.where((c < 1).all(-1, keepdim=True), corner, mode)

    @property
    def variance(self) -> Tensor:
        con0 = self.concentration.sum(-1, keepdim=True)
        c = self.concentration
        return c * (con0 - c) / (con0.pow(2) * (con0 + 1))

    def entropy(self) -> Tensor:
        c = self.concentration
        k, a0 = c.shape[-1], c.sum(-1)
        return (lgamma(c).sum(-1) - lgamma(a0) - (k - a0) * digamma(a0)
                - ((c - 1.0) * digamma(c)).sum(-1))

    @property
    def _natural_params(self) -> tuple:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return lgamma(x).sum(-1) - lgamma(x.sum(-1))
