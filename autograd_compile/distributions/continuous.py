"""Univariate continuous families written directly: Normal, Uniform, Exponential, Laplace,
Cauchy, Gamma, Chi2, Beta, StudentT, FisherSnedecor, VonMises, GeneralizedPareto,
ContinuousBernoulli. (Families that are a transform of another live in
:mod:`.transformed`.)

Reparameterised draws (``rsample``) are a differentiable function of a parameter-free draw
(``loc + scale * eps``), or, for the gamma family, carry the implicit gradient of the sampler.

>>> import autograd_compile as acg
>>> from autograd_compile.distributions import Normal
>>> round(Normal(0.0, 1.0).log_prob(acg.tensor(0.0)).item(), 4)
-0.9189
"""
from __future__ import annotations

import math
from typing import Any

import autograd_compile as acg
from autograd_compile.kernels import special_dist as S
from autograd_compile.nn import functional as F
from autograd_compile.tensor import Tensor

from . import constraints
from .dirichlet import Dirichlet
from .distribution import ExponentialFamily, _Validating
from .utils import (as_float, atan, broadcast_all, clamp_probs, digamma, erfinv, i0e, i1e, key,
                    lazy_property, lgamma, logits_to_probs, probs_to_logits, standard_normal,
                    standard_uniform, xlogy)

__all__ = ["Normal", "Uniform", "Exponential", "Laplace", "Cauchy", "Gamma", "Chi2", "Beta",
           "StudentT", "FisherSnedecor", "VonMises", "GeneralizedPareto", "ContinuousBernoulli"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
EULER = 0.57721566490153286060


def _nan_like(x: Tensor) -> Tensor:
    return acg.full(tuple(x.shape), math.nan, dtype=x.dtype)


def _inf_like(x: Tensor) -> Tensor:
    return acg.full(tuple(x.shape), math.inf, dtype=x.dtype)


class Normal(ExponentialFamily, _Validating):
    """Normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``.

    >>> import autograd_compile as acg
    >>> d = Normal(acg.tensor([0.0]), acg.tensor([2.0])); d.variance.tolist()
    [4.0]
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale.pow(2)

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        eps = standard_normal(self._extended_shape(sample_shape), self.loc)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - _LOG_SQRT_2PI

    def cdf(self, value: Tensor) -> Tensor:
        self._check(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    @property
    def _natural_params(self) -> tuple:
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal()

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()


class Uniform(_Validating):
    """Uniform on the half-open interval ``[low, high)``."""

    has_rsample = True

    @property
    def arg_constraints(self) -> dict:  # type: ignore[override]
        """Each bound constrained by the other (PyTorch's: low < high)."""
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return _nan_like(self.high)

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        u = standard_uniform(self._extended_shape(sample_shape), self.low)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        inside = (self.low <= value).to(self.low.dtype) * (self.high > value).to(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        self._check(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()


class Exponential(ExponentialFamily, _Validating):
    """Exponential distribution with ``rate`` (mean ``1 / rate``)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def mode(self) -> Tensor:
        return acg.zeros_like(self.rate)

    @property
    def stddev(self) -> Tensor:
        return self.rate.reciprocal()

    @property
    def variance(self) -> Tensor:
        return self.rate.pow(-2)

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        u = standard_uniform(self._extended_shape(sample_shape), self.rate)
        return -(-u).log1p() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        self._check(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        return -(-value).log1p() / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self) -> tuple:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return -(-x).log()


class Laplace(_Validating):
    """Laplace distribution with ``loc`` and ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return 2 * self.scale.pow(2)

    @property
    def stddev(self) -> Tensor:
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        eps = acg.finfo(self.loc.dtype).eps
        u = standard_uniform(self._extended_shape(sample_shape), self.loc) * (2 - eps) - 1 + eps
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value: Tensor) -> Tensor:
        self._check(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * (-z.abs() / self.scale).expm1()

    def icdf(self, value: Tensor) -> Tensor:
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self) -> Tensor:
        return 1 + (2 * self.scale).log()


class Cauchy(_Validating):
    """Cauchy (Lorentz) distribution with median ``loc`` and half-width ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return _nan_like(self.loc)

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return _inf_like(self.loc)

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        u = standard_uniform(self._extended_shape(sample_shape), self.loc)
        return self.loc + self.scale * (math.pi * (u - 0.5)).tan()

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - (z * z).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        self._check(value)
        return atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class Gamma(ExponentialFamily, _Validating):
    """Gamma distribution with shape ``concentration`` and ``rate`` (mean c / rate).
    ``rsample`` carries the implicit reparameterisation gradient to the concentration."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        draw = S.dist_gamma_sample(self.concentration.expand(shape), key())
        return (draw / self.rate.expand(shape)).clamp(min=acg.finfo(draw.dtype).tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        value = as_float(value, self.rate)
        self._check(value)
        return (xlogy(self.concentration, self.rate) + xlogy(self.concentration - 1, value)
                - self.rate * value - lgamma(self.concentration))

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + lgamma(c) + (1.0 - c) * digamma(c)

    def cdf(self, value: Tensor) -> Tensor:
        self._check(value)
        return S.dist_gammainc(self.concentration, self.rate * value)

    @property
    def _natural_params(self) -> tuple:
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return lgamma(x + 1) + (x + 1) * (-y.reciprocal()).log()


class Chi2(Gamma):
    """Chi-squared with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, acg.full_like(df, 0.5), validate_args=validate_args)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2


class Beta(ExponentialFamily, _Validating):
    """Beta distribution on (0, 1) with ``concentration1`` (alpha) and ``concentration0``
    (beta); draws are ``X / (X + Y)`` of two gammas (reparameterised)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        c1, c0 = broadcast_all(concentration1, concentration0)
        # a two-category Dirichlet holds the parameters (and checks them first, as PyTorch's)
        self._dirichlet = Dirichlet(acg.stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    @property
    def concentration1(self) -> Tensor:
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        return self._dirichlet.log_prob(acg.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    @property
    def _natural_params(self) -> tuple:
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return lgamma(x) + lgamma(y) - lgamma(x + y)

    _mean_carrier_measure = 0


class StudentT(_Validating):
    """Student's t with ``df`` degrees of freedom, ``loc`` and ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: Any, loc: Any = 0.0, scale: Any = 1.0,
                 validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return acg.where(self.df > 1, self.loc, _nan_like(self.loc))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        df = self.df
        wide = self.scale.pow(2) * df / (df - 2)
        return acg.where(df > 2, wide, acg.where(df > 1, _inf_like(df), _nan_like(df)))

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        x = standard_normal(shape, self.df)
        z = Chi2(self.df, validate_args=False).rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + lgamma(0.5 * self.df) - lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * (y.pow(2) / self.df).log1p() - z

    def entropy(self) -> Tensor:
        half = 0.5 * self.df
        lbeta = lgamma(half) + math.lgamma(0.5) - lgamma(half + 0.5)
        return (self.scale.log() + (half + 0.5) * (digamma(half + 0.5) - digamma(half))
                + 0.5 * self.df.log() + lbeta)


class FisherSnedecor(_Validating):
    """Fisher-Snedecor (F) distribution with ``df1`` and ``df2`` degrees of freedom."""

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: Any, df2: Any, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        super().__init__(self.df1.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        df2 = self.df2
        return acg.where(df2 > 2, df2 / (df2 - 2), _nan_like(df2))

    @property
    def mode(self) -> Tensor:
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return acg.where(self.df1 > 2, mode, _nan_like(mode))

    @property
    def variance(self) -> Tensor:
        df1, df2 = self.df1, self.df2
        var = 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))
        return acg.where(df2 > 4, var, _nan_like(var))

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        x1 = Gamma(0.5 * self.df1, 0.5, validate_args=False).rsample(sample_shape) / self.df1
        x2 = Gamma(0.5 * self.df2, 0.5, validate_args=False).rsample(sample_shape) / self.df2
        tiny = acg.finfo(x2.dtype).tiny
        return x1.clamp(min=tiny) / x2.clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        ct1, ct2 = self.df1 * 0.5, self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = lgamma(ct1 + ct2) - lgamma(ct1) - lgamma(ct2)
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3


class VonMises(_Validating):
    """Von Mises (circular normal) distribution on [-pi, pi) with ``loc`` and
    ``concentration``; sampled by rejection (no rsample, as in PyTorch)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Any, concentration: Any, validate_args: bool | None = None) -> None:
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        k = self.concentration
        log_i0 = i0e(k).log() + k  # log I0(k), stable for large k
        return k * (value - self.loc).cos() - math.log(2 * math.pi) - log_i0

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with acg.no_grad():
            return S.dist_von_mises_sample(self.loc.expand(shape),
                                           self.concentration.expand(shape), key())

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        k = self.concentration
        return 1 - i1e(k) / i0e(k)


class GeneralizedPareto(_Validating):
    """Generalised Pareto with ``loc``, ``scale`` and ``concentration`` (xi)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, concentration: Any,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def _safe(self) -> tuple:
        """Where xi == 0 (the exponential limit) and xi with those entries replaced by 1."""
        zero = self.concentration.abs() <= 1e-8
        return zero, acg.where(zero, acg.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        return self.icdf(standard_uniform(self._extended_shape(sample_shape), self.loc))

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        z = (value - self.loc) / self.scale
        zero, c = self._safe()
        y = 1 / c + acg.ones_like(z)
        nonzero = acg.where(y == 0, y, y * (c * z).log1p())
        return -self.scale.log() - acg.where(zero, z, nonzero)

    def log_survival_function(self, value: Tensor) -> Tensor:
        self._check(value)
        z = (value - self.loc) / self.scale
        zero, c = self._safe()
        return acg.where(zero, -z, -(c * z).log1p() / c)

    def log_cdf(self, value: Tensor) -> Tensor:
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return self.log_cdf(value).exp()

    def icdf(self, value: Tensor) -> Tensor:
        zero, c = self._safe()
        logu = (-value).log1p()
        return acg.where(zero, self.loc - self.scale * logu,
                         self.loc + self.scale / c * (-c * logu).expm1())

    @property
    def mean(self) -> Tensor:
        valid = self.concentration < 1
        c = acg.where(valid, self.concentration, acg.full_like(self.concentration, 0.5))
        return acg.where(valid, self.loc + self.scale / (1 - c), _nan_like(self.loc))

    @property
    def variance(self) -> Tensor:
        valid = self.concentration < 0.5
        c = acg.where(valid, self.concentration, acg.full_like(self.concentration, 0.25))
        return acg.where(valid, self.scale.pow(2) / ((1 - c).pow(2) * (1 - 2 * c)),
                         _nan_like(self.scale))

    def entropy(self) -> Tensor:
        return (self.scale.log() + self.concentration + 1).expand(tuple(self._batch_shape))

    @property
    def mode(self) -> Tensor:
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        upper = acg.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                          _inf_like(self.loc))
        return constraints.interval(self.loc, upper)


class ContinuousBernoulli(ExponentialFamily, _Validating):
    """The continuous Bernoulli on [0, 1] (Loaiza-Ganem & Cunningham, 2019), by ``probs`` or
    ``logits``; near probs = 0.5 a Taylor expansion replaces the unstable normaliser."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs: Any = None, logits: Any = None, lims: tuple = (0.499, 0.501),
                 validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            if validate_args is not None and not bool(
                    constraints.unit_interval.check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(self.probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        self._lims = lims
        super().__init__(self._param.shape, validate_args=validate_args)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside(self) -> Tensor:
        return (self.probs <= self._lims[0]) | (self.probs >= self._lims[1])

    def _cut_probs(self) -> Tensor:
        return acg.where(self._outside(), self.probs, acg.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self) -> Tensor:
        cut = self._cut_probs()
        below = acg.where(cut <= 0.5, cut, acg.zeros_like(cut))
        above = acg.where(cut >= 0.5, cut, acg.ones_like(cut))
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - acg.where(
            cut <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return acg.where(self._outside(), log_norm, taylor)

    @property
    def mean(self) -> Tensor:
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return acg.where(self._outside(), mus, taylor)

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    @property
    def variance(self) -> Tensor:
        cut = self._cut_probs()
        vars_ = (cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2)
                 + 1.0 / ((-cut).log1p() - cut.log()).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return acg.where(self._outside(), vars_, taylor)

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        return self.icdf(standard_uniform(self._extended_shape(sample_shape), self.probs))

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + \
            self._cont_bern_log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        self._check(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = acg.where(self._outside(), cdfs, value)
        return acg.where(value <= 0.0, acg.zeros_like(value),
                         acg.where(value >= 1.0, acg.ones_like(value), unbounded))

    def icdf(self, value: Tensor) -> Tensor:
        cut = self._cut_probs()
        inner = ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) / (
            cut.log() - (-cut).log1p())
        return acg.where(self._outside(), inner, value)

    def entropy(self) -> Tensor:
        log0, log1 = (-self.probs).log1p(), self.probs.log()
        return self.mean * (log0 - log1) - self._cont_bern_log_norm() - log0

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        out_unst = (x <= self._lims[0] - 0.5) | (x >= self._lims[1] - 0.5)
        cut = acg.where(out_unst, x, acg.full_like(x, self._lims[0] - 0.5))
        log_norm = (cut.exp() - 1.0).abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return acg.where(out_unst, log_norm, taylor)
