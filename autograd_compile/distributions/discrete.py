"""Discrete families: Bernoulli, Categorical, OneHotCategorical(StraightThrough), Binomial,
Multinomial, Poisson, Geometric, NegativeBinomial.

Probability families take ``probs`` or ``logits`` (exactly one); the other is derived on
first use. Draws carry no gradient (``has_rsample`` is False, except the straight-through
one-hot whose gradient is that of ``probs``).

>>> import autograd_compile as acg
>>> from autograd_compile.distributions import Categorical
>>> d = Categorical(probs=acg.tensor([0.25, 0.75]))
>>> round(d.log_prob(acg.tensor(1)).exp().item(), 2)
0.75
"""
from __future__ import annotations

import math
from typing import Any

import autograd_compile as acg
from autograd_compile.kernels import special_dist as S
from autograd_compile.nn import functional as F
from autograd_compile.tensor import Tensor

from . import constraints
from ._checks import require
from .distribution import ExponentialFamily, _BinaryParams, _BinaryProbs, _Validating
from .utils import (broadcast_all, broadcast_shapes, key, lazy_property, lgamma,
                    logits_to_probs, probs_to_logits, xlogy)

__all__ = ["Bernoulli", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough",
           "Binomial", "Multinomial", "Poisson", "Geometric", "NegativeBinomial"]


def _one_of(probs: Any, logits: Any) -> None:
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _batch_arange(n: int, batch: tuple, dtype: Any, expand: bool) -> Tensor:
    """0..n-1 along a new leading dim, broadcast over ``batch``."""
    values = acg.arange(n, dtype=dtype).reshape((-1,) + (1,) * len(batch))
    return values.expand((-1,) + tuple(batch)) if expand else values


def _logsigmoid(x: Tensor) -> Tensor:
    return -F.softplus(-x)


class Bernoulli(_BinaryParams, ExponentialFamily, _Validating):
    """Bernoulli distribution over {0, 1} by ``probs`` or ``logits``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return acg.where(self.probs == 0.5, acg.full_like(mode, math.nan), mode)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with acg.no_grad():
            return acg.bernoulli(self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value.to(logits.dtype),
                                                   reduction="none")

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        return _batch_arange(2, tuple(self._batch_shape), self._param.dtype, expand)

    @property
    def _natural_params(self) -> tuple:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp().log1p()


class Categorical(_Validating):
    """A categorical distribution over ``0 .. K-1`` by ``probs`` (normalised) or ``logits``
    (normalised to log-probabilities); batch dims are all but the last."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.independent(
        constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(tuple(self._param.shape[:-1]), validate_args=validate_args)

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def param_shape(self) -> acg.Size:
        return self._param.size()

    @property
    def mean(self) -> Tensor:
        return acg.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return acg.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        sample_shape = acg.Size(sample_shape)
        n = max(sample_shape.numel(), 1)
        with acg.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            draws = acg.multinomial(probs_2d, n, True).T
            return draws.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        value = value.long().unsqueeze(-1)
        shape = broadcast_shapes(value.shape, self.logits.shape)
        log_pmf = self.logits.expand(shape)
        value = value.expand(tuple(shape[:-1]) + (1,))
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=acg.finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        return _batch_arange(self._num_events, tuple(self._batch_shape), acg.int64, expand)


class OneHotCategorical(_Validating):
    """A categorical draw as a one-hot vector (event shape ``(K,)``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    @property
    def _param(self) -> Tensor:
        return self._categorical._param

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def mean(self) -> Tensor:
        return self._categorical.probs

    @property
    def mode(self) -> Tensor:
        probs = self._categorical.probs
        return F.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self) -> Tensor:
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self) -> acg.Size:
        return self._categorical.param_shape

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return F.one_hot(indices, self._categorical._num_events).to(probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = self.event_shape[0]
        values = acg.eye(n, dtype=self._param.dtype)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """One-hot draws whose gradient is the straight-through estimator (that of ``probs``)."""

    has_rsample = True

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


def _clamp_by_zero(x: Tensor) -> Tensor:
    """max(x, 0) with the gradient 1/2 at 0 (as PyTorch)."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


def _homogeneous_count(total_count: Tensor, what: str) -> int:
    n = int(total_count.max().item())
    if not bool((total_count == n).all()):
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return n


class Binomial(_BinaryParams, _Validating):
    """Binomial: successes in ``total_count`` trials of probability ``probs`` (or
    ``logits``)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count: Any = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> Any:
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.probs

    @property
    def mode(self) -> Tensor:
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with acg.no_grad():
            return S.dist_binomial_sample(self.total_count.expand(shape),
                                          self.probs.expand(shape), key())

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        n, logits = self.total_count, self.logits
        normalize = n * _clamp_by_zero(logits) + n * (-logits.abs()).exp().log1p() - lgamma(n + 1)
        return (value * logits - lgamma(value + 1) - lgamma(n - value + 1) - normalize)

    def entropy(self) -> Tensor:
        _homogeneous_count(self.total_count, "entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = _homogeneous_count(self.total_count, "enumerate_support")
        return _batch_arange(n + 1, tuple(self._batch_shape), self._param.dtype, expand)


class Multinomial(_Validating):
    """Counts of ``total_count`` categorical draws (event shape ``(K,)``)."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count: int = 1, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    @property
    def probs(self) -> Tensor:
        return self._categorical.probs

    @property
    def logits(self) -> Tensor:
        return self._categorical.logits

    @property
    def param_shape(self) -> acg.Size:
        return self._categorical.param_shape

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> Any:
        return constraints.multinomial(self.total_count)

    @property
    def mean(self) -> Tensor:
        return self.probs * self.total_count

    @property
    def variance(self) -> Tensor:
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        sample_shape = tuple(acg.Size(sample_shape))
        with acg.no_grad():
            draws = self._categorical.sample((self.total_count,) + sample_shape)
            counts = F.one_hot(draws, self._categorical._num_events).sum(0)
            return counts.to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        logits, value = broadcast_all(self.logits, value)
        logits = acg.where((value == 0) & (logits == -math.inf), acg.zeros_like(logits), logits)
        return (lgamma(value.sum(-1) + 1) - lgamma(value + 1).sum(-1)
                + (logits * value).sum(-1))

    def entropy(self) -> Tensor:
        n = acg.tensor(float(self.total_count), dtype=self.probs.dtype)
        term1 = n * self._categorical.entropy() - lgamma(n + 1)
        binomial = Binomial(self.total_count, self.probs, validate_args=False)
        support = binomial.enumerate_support(expand=False)[1:]
        weights = lgamma(support + 1)
        term2 = (binomial.log_prob(support).exp() * weights).sum(0).sum(-1)
        return term1 + term2


class Poisson(ExponentialFamily, _Validating):
    """Poisson distribution with ``rate``."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _mean_carrier_measure = 0

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.rate

    @property
    def mode(self) -> Tensor:
        return self.rate.floor()

    @property
    def variance(self) -> Tensor:
        return self.rate

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with acg.no_grad():
            return S.dist_poisson_sample(self.rate.expand(shape), key())

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - lgamma(value + 1)

    @property
    def _natural_params(self) -> tuple:
        return (self.rate.log(),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp()


def _positive_probs_message(dist: Any, value: Tensor) -> str:
    return (f"Expected parameter probs ({type(value).__name__} of shape {tuple(value.shape)}) "
            f"of distribution {dist!r} to be positive but found invalid values:\n"
            f"{value[~(value > 0)]}")


class Geometric(_BinaryProbs, _Validating):
    """Failures before the first success of Bernoulli(``probs``) trials."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        param = self.probs if probs is not None else self.logits
        super().__init__(param.shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            require(self.probs > 0, self, [self.probs], _positive_probs_message)

    @property
    def mean(self) -> Tensor:
        return 1.0 / self.probs - 1.0

    @property
    def mode(self) -> Tensor:
        return acg.zeros_like(self.probs)

    @property
    def variance(self) -> Tensor:
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        with acg.no_grad():
            u = acg.rand(list(shape), dtype=self.probs.dtype)
            u = u.clamp(min=acg.finfo(self.probs.dtype).tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        value, probs = broadcast_all(value, self.probs)
        probs = acg.where((probs == 1) & (value == 0), acg.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                  reduction="none") / self.probs


class NegativeBinomial(_BinaryParams, _Validating):
    """Successes before ``total_count`` failures of Bernoulli(``probs``) trials."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count: Any, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
        self._param = self.probs if probs is not None else self.logits
        super().__init__(self._param.shape, validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        return self.total_count * self.logits.exp()

    @property
    def mode(self) -> Tensor:
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self) -> Tensor:
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        from .continuous import Gamma
        with acg.no_grad():
            rate = Gamma(self.total_count, (-self.logits).exp(),
                         validate_args=False).sample(sample_shape)
            return S.dist_poisson_sample(rate, key())

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        n = self.total_count
        unnormalized = n * _logsigmoid(-self.logits) + value * _logsigmoid(self.logits)
        normalization = -lgamma(n + value) + lgamma(1.0 + value) + lgamma(n)
        normalization = acg.where(n + value == 0, acg.zeros_like(normalization), normalization)
        return unnormalized - normalization
