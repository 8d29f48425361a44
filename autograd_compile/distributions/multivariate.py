"""Multivariate families: Dirichlet, MultivariateNormal (covariance, precision or Cholesky
factor), LowRankMultivariateNormal, LKJCholesky, Wishart.

Matrix work goes through a Cholesky factor and triangular solves (private ``dist_*`` ops with
gradients), so densities and reparameterised draws differentiate in every mode.

>>> import autograd_compile as acg
>>> from autograd_compile.distributions import MultivariateNormal
>>> d = MultivariateNormal(acg.zeros(2), scale_tril=acg.eye(2))
>>> round(d.log_prob(acg.zeros(2)).item(), 4)
-1.8379
"""
from __future__ import annotations

import math
from typing import Any

import autograd_compile as acg
from autograd_compile.tensor import Tensor

from . import constraints
from .continuous import Beta, Chi2
from .dirichlet import Dirichlet  # noqa: F401  (re-exported: PyTorch's multivariate families)
from .distribution import ExponentialFamily, _Validating
from .utils import (broadcast_shapes, cholesky, diag_embed, diagonal, digamma, lazy_property,
                    lgamma, mvlgamma, solve_triangular, standard_normal)

__all__ = ["Dirichlet", "MultivariateNormal", "LowRankMultivariateNormal", "LKJCholesky",
           "Wishart"]

_LOG_2PI = math.log(2 * math.pi)


def _batch_mv(mat: Tensor, vec: Tensor) -> Tensor:
    return (mat @ vec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(L: Tensor, x: Tensor) -> Tensor:
    """``x^T (L L^T)^-1 x`` by one triangular solve, batches broadcast."""
    return solve_triangular(L, x.unsqueeze(-1)).squeeze(-1).pow(2).sum(-1)


def _half_log_det(L: Tensor) -> Tensor:
    return diagonal(L).log().sum(-1)


def _inverse_from_tril(L: Tensor) -> Tensor:
    """``(L L^T)^-1`` from the factor: ``L^-T L^-1``."""
    linv = solve_triangular(L, acg.eye(L.shape[-1], dtype=L.dtype))
    return linv.mT @ linv


def _precision_to_scale_tril(p: Tensor) -> Tensor:
    return cholesky(_inverse_from_tril(cholesky(p)))


def _one_matrix(*params: Any) -> None:
    if sum(p is not None for p in params) != 1:
        raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril "
                         "may be specified.")


class MultivariateNormal(_Validating):
    """Multivariate normal with mean ``loc`` and one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (a lower Cholesky factor of the covariance)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        _one_matrix(covariance_matrix, precision_matrix, scale_tril)
        given = [(n, m) for n, m in (("scale_tril", scale_tril),
                                     ("covariance_matrix", covariance_matrix),
                                     ("precision_matrix", precision_matrix)) if m is not None]
        name, matrix = given[0]
        if matrix.dim() < 2:
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional "
                             f"leading batch dimensions")
        batch = tuple(broadcast_shapes(matrix.shape[:-2], loc.shape[:-1]))
        n = loc.shape[-1]
        setattr(self, name, matrix.expand(batch + tuple(matrix.shape[-2:])))
        self.loc = loc.expand(batch + (n,))
        if scale_tril is not None:
            L = self.scale_tril
        elif covariance_matrix is not None:
            L = cholesky(self.covariance_matrix)
        else:
            L = _precision_to_scale_tril(self.precision_matrix)
        self._unbroadcasted_scale_tril = L
        super().__init__(batch, (n,), validate_args=validate_args)

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return L @ L.mT

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return _inverse_from_tril(self._unbroadcasted_scale_tril)

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def variance(self) -> Tensor:
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + tuple(self._event_shape))

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        eps = standard_normal(self._extended_shape(sample_shape), self.loc)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        diff = value - self.loc
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        n = self._event_shape[0]
        return -0.5 * (n * _LOG_2PI + m) - _half_log_det(self._unbroadcasted_scale_tril)

    def entropy(self) -> Tensor:
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + _LOG_2PI) + _half_log_det(self._unbroadcasted_scale_tril)
        return h.expand(tuple(self._batch_shape))


class LowRankMultivariateNormal(_Validating):
    """Multivariate normal with covariance ``cov_factor @ cov_factor.T + diag(cov_diag)``;
    densities by the Woodbury identity through an m x m capacitance matrix."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor,
                 validate_args: bool | None = None) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event}")
        try:
            batch = tuple(broadcast_shapes(loc.shape[:-1], cov_factor.shape[:-2],
                                           cov_diag.shape[:-1]))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from e
        self.loc = loc.expand(batch + event)
        self.cov_factor = cov_factor.expand(batch + tuple(cov_factor.shape[-2:]))
        self.cov_diag = cov_diag.expand(batch + event)
        self._capacitance_tril = self._capacitance(self.cov_factor, self.cov_diag)
        super().__init__(batch, event, validate_args=validate_args)

    @staticmethod
    def _capacitance(w: Tensor, d: Tensor) -> Tensor:
        """Cholesky factor of ``I + W^T D^-1 W`` (m x m)."""
        k = (w.mT / d.unsqueeze(-2)) @ w
        return cholesky(k + acg.eye(w.shape[-1], dtype=w.dtype))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @lazy_property
    def variance(self) -> Tensor:
        return self.cov_factor.pow(2).sum(-1) + self.cov_diag

    @lazy_property
    def scale_tril(self) -> Tensor:
        sqrt_d = self.cov_diag.sqrt().unsqueeze(-1)
        w = self.cov_factor / sqrt_d
        k = w @ w.mT + acg.eye(w.shape[-2], dtype=w.dtype)
        return sqrt_d * cholesky(k)

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        return self.cov_factor @ self.cov_factor.mT + diag_embed(self.cov_diag)

    @lazy_property
    def precision_matrix(self) -> Tensor:
        wt_dinv = self.cov_factor.mT / self.cov_diag.unsqueeze(-2)
        a = solve_triangular(self._capacitance_tril, wt_dinv)
        return diag_embed(self.cov_diag.reciprocal()) - a.mT @ a

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        shape = tuple(self._extended_shape(sample_shape))
        eps_w = standard_normal(shape[:-1] + tuple(self.cov_factor.shape[-1:]), self.loc)
        eps_d = standard_normal(shape, self.loc)
        return self.loc + _batch_mv(self.cov_factor, eps_w) + self.cov_diag.sqrt() * eps_d

    def _log_det(self) -> Tensor:
        return 2 * _half_log_det(self._capacitance_tril) + self.cov_diag.log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        diff = value - self.loc
        wt_dinv = self.cov_factor.mT / self.cov_diag.unsqueeze(-2)
        m = (diff.pow(2) / self.cov_diag).sum(-1) - _batch_mahalanobis(
            self._capacitance_tril, _batch_mv(wt_dinv, diff))
        return -0.5 * (self._event_shape[0] * _LOG_2PI + self._log_det() + m)

    def entropy(self) -> Tensor:
        h = 0.5 * (self._event_shape[0] * (1.0 + _LOG_2PI) + self._log_det())
        return h.expand(tuple(self._batch_shape))


class LKJCholesky(_Validating):
    """LKJ distribution over Cholesky factors of ``dim x dim`` correlation matrices, density
    proportional to ``det(L L^T) ** (concentration - 1)``; sampled by the onion method."""

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Any = 1.0,
                 validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = (concentration if isinstance(concentration, Tensor) else
                                 acg.tensor(float(concentration)),)
        batch = tuple(self.concentration.shape)
        marginal = self.concentration + 0.5 * (dim - 2)
        offset = acg.cat([acg.zeros(1, dtype=marginal.dtype),
                          acg.arange(dim - 1, dtype=marginal.dtype)])
        self._beta = Beta(offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset,
                          validate_args=False)
        super().__init__(batch, (dim, dim), validate_args=validate_args)

    def sample(self, sample_shape: Any = acg.Size()) -> Tensor:
        with acg.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = standard_normal(self._extended_shape(sample_shape), y).tril(-1)
            norm = (u * u).sum(-1, keepdim=True).sqrt()
            first = (acg.arange(self.dim) == 0).unsqueeze(-1)  # row 0 has no off-diagonal
            u = acg.where(first, acg.zeros_like(u), u / acg.where(first, acg.ones_like(norm),
                                                                  norm))
            w = y.sqrt() * u
            tiny = acg.finfo(w.dtype).tiny
            diag = (1 - (w * w).sum(-1)).clamp(min=tiny).sqrt()
            return w + diag_embed(diag)

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        diag = diagonal(value)[..., 1:]
        order = acg.arange(2, self.dim + 1, dtype=value.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize = 0.5 * dm1 * math.log(math.pi) + mvlgamma(alpha - 0.5, dm1) - lgamma(alpha) * dm1
        return unnormalized - normalize


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    return digamma(x.unsqueeze(-1) - acg.arange(p, dtype=x.dtype) / 2).sum(-1)


class Wishart(ExponentialFamily, _Validating):
    """Wishart distribution over positive-definite matrices with ``df`` degrees of freedom
    and one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``; draws by the
    Bartlett decomposition (reparameterised)."""

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, df: Any, covariance_matrix: Tensor | None = None,
                 precision_matrix: Tensor | None = None, scale_tril: Tensor | None = None,
                 validate_args: bool | None = None) -> None:
        _one_matrix(covariance_matrix, precision_matrix, scale_tril)
        name, matrix = next((n, m) for n, m in (("scale_tril", scale_tril),
                                                ("covariance_matrix", covariance_matrix),
                                                ("precision_matrix", precision_matrix))
                            if m is not None)
        if matrix.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        df = df if isinstance(df, Tensor) else acg.tensor(float(df), dtype=matrix.dtype)
        batch = tuple(broadcast_shapes(matrix.shape[:-2], df.shape))
        event = tuple(matrix.shape[-2:])
        p = event[-1]
        if bool((df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, matrix.expand(batch + event))
        self.df = df.expand(batch)
        if scale_tril is not None:
            L = self.scale_tril
        elif covariance_matrix is not None:
            L = cholesky(self.covariance_matrix)
        else:
            L = _precision_to_scale_tril(self.precision_matrix)
        self._unbroadcasted_scale_tril = L
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - acg.arange(p, dtype=L.dtype),
                               validate_args=False)
        super().__init__(batch, event, validate_args=validate_args)

    @property
    def arg_constraints(self) -> dict:  # type: ignore[override]
        p = self._event_shape[-1] if hasattr(self, "_event_shape") else 1
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(p - 1)}

    @lazy_property
    def scale_tril(self) -> Tensor:
        return self._unbroadcasted_scale_tril

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        L = self._unbroadcasted_scale_tril
        return L @ L.mT

    @lazy_property
    def precision_matrix(self) -> Tensor:
        return _inverse_from_tril(self._unbroadcasted_scale_tril)

    def _df_matrix(self) -> Tensor:
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self) -> Tensor:
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        factor = self.df - self._event_shape[-1] - 1
        factor = acg.where(factor <= 0, acg.full_like(factor, math.nan), factor)
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        v = self.covariance_matrix
        d = diagonal(v)
        return self._df_matrix() * (v.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def rsample(self, sample_shape: Any = acg.Size()) -> Tensor:
        """Bartlett: ``L A A^T L^T`` with A lower triangular, chi draws on the diagonal and
        standard normals below it."""
        shape = tuple(self._extended_shape(sample_shape))
        noise = diag_embed(self._dist_chi2.rsample(sample_shape).sqrt())
        noise = noise + standard_normal(shape, self.df).tril(-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.mT

    def log_prob(self, value: Tensor) -> Tensor:
        self._check(value)
        nu, p, L = self.df, self._event_shape[-1], self._unbroadcasted_scale_tril
        # tr((L L^T)^-1 value) through cholesky_solve, as PyTorch: L's gradient is then the
        # general-matrix one (both triangles), as torch's scale_tril.grad
        trace = diagonal(acg.cholesky_solve(value, L)).sum(-1)
        logdet = 2 * _half_log_det(cholesky(value))
        return (-nu * (p * math.log(2) / 2 + _half_log_det(L)) - mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * logdet - trace / 2)

    def entropy(self) -> Tensor:
        nu, p, L = self.df, self._event_shape[-1], self._unbroadcasted_scale_tril
        return ((p + 1) * (p * math.log(2) / 2 + _half_log_det(L)) + mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self) -> tuple:
        nu, p = self.df, self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        p = self._event_shape[-1]
        chol = cholesky(-x)
        return (y + (p + 1) / 2) * (-2 * _half_log_det(chol)) + mvlgamma(
            y + (p + 1) / 2, p)
