"""``kl_divergence(p, q)``: the Kullback-Leibler divergence ``E_p[log p - log q]`` for the
registered pairs of families, and ``register_kl`` to add pairs. Lookup follows the classes'
MRO, the most specific registered pair winning (PyTorch's rule).

>>> import autograd_compile as acg
>>> from autograd_compile.distributions import Normal, kl_divergence
>>> round(kl_divergence(Normal(0.0, 1.0), Normal(1.0, 1.0)).item(), 4)
0.5
"""
from __future__ import annotations

import math
import warnings
from functools import total_ordering
from typing import Any, Callable

import autograd_compile as acg
from autograd_compile.nn import functional as F
from autograd_compile.tensor import Tensor

from .composed import Independent, TransformedDistribution
from .continuous import (EULER, Beta, Cauchy, ContinuousBernoulli, Exponential, Gamma, Laplace,
                         Normal, Uniform)
from .discrete import (Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical,
                       Poisson)
from .distribution import Distribution, ExponentialFamily
from .multivariate import Dirichlet, LowRankMultivariateNormal, MultivariateNormal
from .transformed import Gumbel, HalfNormal, Pareto
from .transforms import _sum_rightmost
from .utils import broadcast_shapes, digamma, lgamma, solve_triangular

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}  # (type_p, type_q) -> fn
_KL_MEMOIZE: dict = {}  # (type_p, type_q) -> the fn chosen by MRO lookup


def register_kl(type_p: type, type_q: type) -> Callable:
    """Decorator registering ``fn(p, q)`` as the KL divergence of a pair of classes.

    >>> from autograd_compile.distributions import Distribution, register_kl
    >>> class A(Distribution): pass
    >>> @register_kl(A, A)
    ... def _kl_a_a(p, q): return 0.0
    """
    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fn: Callable) -> Callable:
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()  # a new pair may be more specific than a remembered choice
        return fn
    return decorator


@total_ordering
class _Match:
    """A registered pair ordered by how specific it is (earlier in the MROs is smaller)."""

    def __init__(self, *types: type) -> None:
        self.types = types

    def __eq__(self, other: Any) -> bool:
        return self.types == other.types

    def __le__(self, other: Any) -> bool:
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p: type, type_q: type) -> Callable | None:
    """The most specific registered implementation for the pair (None if there is none)."""
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return None
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left, right = _KL_REGISTRY[left_p, left_q], _KL_REGISTRY[right_p, right_q]
    if left is not right:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
                      f"Please register_kl({left_p.__name__}, {right_q.__name__})",
                      RuntimeWarning)
    return left


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """``KL(p || q)`` over the batch shape; NotImplementedError for an unregistered pair.

    >>> import autograd_compile as acg
    >>> from autograd_compile.distributions import Bernoulli
    >>> round(kl_divergence(Bernoulli(0.5), Bernoulli(0.5)).item(), 4)
    0.0
    """
    pair = type(p), type(q)
    if pair not in _KL_MEMOIZE:
        _KL_MEMOIZE[pair] = _dispatch_kl(*pair)
    fn = _KL_MEMOIZE[pair]
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.__class__.__name__} and q type {q.__class__.__name__}")
    return fn(p, q)


# -- helpers -------------------------------------------------------------------------------------
def _inf_like(x: Tensor) -> Tensor:
    return acg.full(tuple(x.shape), math.inf, dtype=x.dtype)


def _where_inf(cond: Tensor, value: Tensor) -> Tensor:
    """``value`` with +inf where ``cond`` holds."""
    return acg.where(cond, acg.full_like(value, math.inf), value)


def _zero_where(cond: Tensor, value: Tensor) -> Tensor:
    return acg.where(cond, acg.zeros_like(value), value)


# -- same family ---------------------------------------------------------------------------------
@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale).pow(2)
    shift = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + shift - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    """Sum over the two outcomes of ``p log(p/q)``; +inf where q excludes what p allows."""
    one = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    one = _zero_where(p.probs == 0, _where_inf(q.probs == 0, one))
    zero = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    zero = _zero_where(p.probs == 1, _where_inf(q.probs == 1, zero))
    return one + zero


@register_kl(Beta, Beta)
def _kl_beta_beta(p: Beta, q: Beta) -> Tensor:
    a1, b1, a2, b2 = p.concentration1, p.concentration0, q.concentration1, q.concentration0
    lbeta_q = lgamma(a2) + lgamma(b2) - lgamma(a2 + b2)
    lbeta_p = lgamma(a1) + lgamma(b1) - lgamma(a1 + b1)
    return (lbeta_q - lbeta_p + (a1 - a2) * digamma(a1) + (b1 - b2) * digamma(b1)
            + (a2 - a1 + b2 - b1) * digamma(a1 + b1))


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    """Finite only for equal counts (a larger q count gives a support p lacks: not
    implemented, as in PyTorch)."""
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > "
                                  "p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p()
                          - (-q.probs).log1p())
    return _where_inf(p.total_count > q.total_count, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = _zero_where((p.probs == 0).expand_as(t), _where_inf((q.probs == 0).expand_as(t), t))
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    num = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (num / (4 * p.scale * q.scale)).log()


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_cb_cb(p: ContinuousBernoulli, q: ContinuousBernoulli) -> Tensor:
    cross = p.mean * (p.logits - q.logits)
    return (cross + p._cont_bern_log_norm() + (-p.probs).log1p()
            - q._cont_bern_log_norm() - (-q.probs).log1p())


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    a, b = p.concentration, q.concentration
    sum_a, sum_b = a.sum(-1), b.sum(-1)
    t1 = lgamma(sum_a) - lgamma(sum_b) - (lgamma(a) - lgamma(b)).sum(-1)
    return t1 + ((a - b) * (digamma(a) - digamma(sum_a).unsqueeze(-1))).sum(-1)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p: Exponential, q: Exponential) -> Tensor:
    ratio = q.rate / p.rate
    return ratio - 1 - ratio.log()


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log-normaliser (same family only)."""
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    p_params = [t.detach().requires_grad_() for t in p._natural_params]
    q_params = q._natural_params
    with acg.enable_grad():
        lg_p = p._log_normalizer(*p_params)
        grads = acg.autograd.grad(lg_p.sum(), p_params, create_graph=True)
    result = q._log_normalizer(*q_params) - lg_p
    for pp, qp, g in zip(p_params, q_params, grads):
        result = result - _sum_rightmost((qp - pp) * g, len(q.event_shape))
    return result


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p: Gamma, q: Gamma) -> Tensor:
    a1, r1, a2, r2 = p.concentration, p.rate, q.concentration, q.rate
    return (a2 * (r1 / r2).log() + lgamma(a2) - lgamma(a1) + (a1 - a2) * digamma(a1)
            + (r2 - r1) * (a1 / r1))


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p: Gumbel, q: Gumbel) -> Tensor:
    ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    return (-ratio.log() + shift + ratio * EULER + (lgamma(1 + ratio) - shift).exp()
            - (1 + EULER))


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p: Laplace, q: Laplace) -> Tensor:
    ratio = p.scale / q.scale
    dist = (p.loc - q.loc).abs()
    return -ratio.log() + dist / q.scale + ratio * (-dist / p.scale).exp() - 1


def _scale_tril(d: Distribution) -> Tensor:
    return getattr(d, "_unbroadcasted_scale_tril", None) if isinstance(
        d, MultivariateNormal) else d.scale_tril


@register_kl(MultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_mvn(p: Distribution, q: Distribution) -> Tensor:
    """``log|Lq|/|Lp| + (||Lq^-1 Lp||_F^2 + ||Lq^-1 (mq - mp)||^2 - n) / 2``."""
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    lp, lq = _scale_tril(p), _scale_tril(q)
    eye = acg.eye(lp.shape[-1], dtype=lp.dtype)
    half_log_det = ((lq * eye).sum(-1).log().sum(-1) - (lp * eye).sum(-1).log().sum(-1))
    n = p.event_shape[0]
    shape = tuple(broadcast_shapes(tuple(lp.shape), tuple(lq.shape)))
    frob = solve_triangular(lq.expand(shape), lp.expand(shape)).pow(2).sum((-2, -1))
    diff = (q.loc - p.loc).unsqueeze(-1)
    shape_m = tuple(broadcast_shapes(tuple(lq.shape[:-2]), tuple(diff.shape[:-2])))
    maha = solve_triangular(lq.expand(shape_m + tuple(lq.shape[-2:])),
                            diff.expand(shape_m + tuple(diff.shape[-2:]))).pow(2).sum((-2, -1))
    return half_log_det + 0.5 * (frob + maha - n)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p: Pareto, q: Pareto) -> Tensor:
    """+inf where p puts mass below q's minimum."""
    ratio = q.alpha / p.alpha
    kl = q.alpha * (p.scale / q.scale).log() - ratio.log() + ratio - 1
    return _where_inf(p.scale < q.scale, kl)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution
                                ) -> Tensor:
    """Invariant under a shared bijection: the base distributions' divergence."""
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    extra = len(p.event_shape) - len(p.base_dist.event_shape)
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), extra)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    kl = ((q.high - q.low) / (p.high - p.low)).log()
    return _where_inf((q.low > p.low) | (q.high < p.high), kl)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


# -- across families -----------------------------------------------------------------------------
@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return -p.entropy() - (p.probs * q.rate.log() - q.rate)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p: Uniform, q: Normal) -> Tensor:
    width = p.high - p.low
    mid = (p.high + p.low) / 2 - q.loc
    return ((math.sqrt(2 * math.pi) * q.scale / width).log()
            + 0.5 * (width.pow(2) / 12 + mid.pow(2)) / q.scale.pow(2))


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p: Exponential, q: Normal) -> Tensor:
    """``E_p[x] = 1/rate``, ``E_p[x^2] = 2/rate^2``, ``H(p) = 1 - log rate``."""
    var = q.scale.pow(2)
    second = 2 / p.rate.pow(2) - 2 * q.loc / p.rate + q.loc.pow(2)
    return p.rate.log() - 1 + 0.5 * (2 * math.pi * var).log() + second / (2 * var)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p: Exponential, q: Gamma) -> Tensor:
    """``E_p[log x] = -gamma - log rate``."""
    a, b = q.concentration, q.rate
    return (p.rate.log() - 1 - a * b.log() + lgamma(a) + (a - 1) * (EULER + p.rate.log())
            + b / p.rate)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p: Gamma, q: Exponential) -> Tensor:
    return -p.entropy() - q.rate.log() + q.rate * p.concentration / p.rate


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p: Normal, q: Laplace) -> Tensor:
    """``E|x - m|`` of a normal: the folded normal's mean."""
    d = p.loc - q.loc
    s = p.scale
    mean_abs = (s * math.sqrt(2 / math.pi) * (-d.pow(2) / (2 * s.pow(2))).exp()
                + d * (d / (s * math.sqrt(2))).erf())
    return -p.entropy() + (2 * q.scale).log() + mean_abs / q.scale


def _infinite(p_param: str) -> Callable:
    """A divergence that is +inf: p gives mass where q has none."""
    return lambda p, q: _inf_like(getattr(p, p_param))


_BOUNDED = (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform)
for _p, _param in ((Normal, "loc"), (Gumbel, "loc"), (Laplace, "loc")):
    for _q in _BOUNDED:
        register_kl(_p, _q)(_infinite(_param))
for _p, _param in ((Exponential, "rate"), (Gamma, "concentration")):
    for _q in (Beta, ContinuousBernoulli, Pareto, Uniform):
        register_kl(_p, _q)(_infinite(_param))
for _q in (Beta, ContinuousBernoulli, Uniform):
    register_kl(Pareto, _q)(_infinite("scale"))


# -- across families by expectation: KL(p || q) = -H(p) - E_p[log q] -------------------------------
def _mean_log(p: Distribution) -> Tensor:
    """``E_p[log x]`` for the positive families that need it."""
    if isinstance(p, Beta):
        return digamma(p.concentration1) - digamma(p.concentration1 + p.concentration0)
    if isinstance(p, Pareto):
        return p.scale.log() + p.alpha.reciprocal()
    if isinstance(p, Uniform):
        return _uniform_mean_log(p.low, p.high)
    raise NotImplementedError


def _uniform_mean_log(low: Tensor, high: Tensor) -> Tensor:
    """``E[log x]`` of x uniform on [low, high], low >= 0 (0 log 0 = 0)."""
    from .utils import xlogy
    return (xlogy(high, high) - xlogy(low, low)) / (high - low) - 1


def _to_normal(p: Distribution, q: Normal) -> Tensor:
    """``log q`` is quadratic: only p's mean and variance enter."""
    second = p.variance + (p.mean - q.loc).pow(2)
    return (-p.entropy() + q.scale.log() + 0.5 * math.log(2 * math.pi)
            + second / (2 * q.scale.pow(2)))


for _p in (Beta, ContinuousBernoulli, Gamma, Gumbel, Laplace, Pareto):
    register_kl(_p, Normal)(_to_normal)


def _to_exponential(p: Distribution, q: Exponential) -> Tensor:
    """``log q = log rate - rate x``: affine in x."""
    return -p.entropy() - q.rate.log() + q.rate * p.mean


for _p in (Beta, ContinuousBernoulli, Pareto):
    register_kl(_p, Exponential)(_to_exponential)


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p: Uniform, q: Exponential) -> Tensor:
    return _where_inf(p.low < 0, _to_exponential(p, q))


def _to_gamma(p: Distribution, q: Gamma) -> Tensor:
    a, b = q.concentration, q.rate
    return (-p.entropy() - a * b.log() + lgamma(a) - (a - 1) * _mean_log(p) + b * p.mean)


for _p in (Beta, Pareto):
    register_kl(_p, Gamma)(_to_gamma)


@register_kl(Uniform, Gamma)
def _kl_uniform_gamma(p: Uniform, q: Gamma) -> Tensor:
    return _where_inf(p.low < 0, _to_gamma(p, q))


def _cb_log_prob(q: ContinuousBernoulli, x_mean: Tensor) -> Tensor:
    """``E_p[log q]``: the continuous Bernoulli's log density is affine in x."""
    return x_mean * q.logits + (-q.probs).log1p() + q._cont_bern_log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_cb(p: Beta, q: ContinuousBernoulli) -> Tensor:
    return -p.entropy() - _cb_log_prob(q, p.mean)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_cb(p: Uniform, q: ContinuousBernoulli) -> Tensor:
    kl = -p.entropy() - _cb_log_prob(q, p.mean)
    return _where_inf((p.low < 0) | (p.high > 1), kl)


def _to_uniform(p: Distribution, q: Uniform) -> Tensor:
    """p on [0, 1]: finite only where q covers it."""
    kl = -p.entropy() + (q.high - q.low).log()
    return _where_inf((q.low > 0) | (q.high < 1), kl)


for _p in (Beta, ContinuousBernoulli):
    register_kl(_p, Uniform)(_to_uniform)


@register_kl(Uniform, Beta)
def _kl_uniform_beta(p: Uniform, q: Beta) -> Tensor:
    a, b = q.concentration1, q.concentration0
    low, high = p.low.clamp(0, 1), p.high.clamp(0, 1)
    mean_log = _uniform_mean_log(low, high)
    mean_log1m = _uniform_mean_log(1 - high, 1 - low)
    lbeta = lgamma(a) + lgamma(b) - lgamma(a + b)
    kl = -p.entropy() - (a - 1) * mean_log - (b - 1) * mean_log1m + lbeta
    return _where_inf((p.low < 0) | (p.high > 1), kl)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p: Uniform, q: Pareto) -> Tensor:
    """``log q = log alpha + alpha log scale - (alpha + 1) log x`` above the scale."""
    kl = (-p.entropy() - q.alpha.log() - q.alpha * q.scale.log()
          + (q.alpha + 1) * _mean_log(p))
    return _where_inf(p.low < q.scale, kl)


def _gumbel_term(p: Distribution, q: Gumbel) -> Tensor:
    """``E_p[exp(-(x - loc) / scale)]`` from p's moment-generating function at -1/scale."""
    t = -q.scale.reciprocal()
    if isinstance(p, Normal):
        mgf = (p.loc * t + 0.5 * p.scale.pow(2) * t.pow(2)).exp()
    elif isinstance(p, Exponential):
        mgf = p.rate / (p.rate - t)
    elif isinstance(p, Gamma):
        mgf = (1 - t / p.rate).pow(-p.concentration)
    elif isinstance(p, Uniform):
        mgf = ((t * p.high).exp() - (t * p.low).exp()) / (t * (p.high - p.low))
    else:
        raise NotImplementedError
    return (q.loc / q.scale).exp() * mgf


def _to_gumbel(p: Distribution, q: Gumbel) -> Tensor:
    """``log q = -log scale - z - exp(-z)``, z = (x - loc) / scale."""
    return (-p.entropy() + q.scale.log() + (p.mean - q.loc) / q.scale + _gumbel_term(p, q))


for _p in (Normal, Exponential, Gamma, Uniform):
    register_kl(_p, Gumbel)(_to_gumbel)
for _q in (Pareto,):
    register_kl(Beta, _q)(_infinite("concentration1"))
    register_kl(ContinuousBernoulli, _q)(_infinite("probs"))
for _q in (Bernoulli, Binomial):
    register_kl(Poisson, _q)(_infinite("rate"))
