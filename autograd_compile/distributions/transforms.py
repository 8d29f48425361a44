"""Transforms: invertible (or not) maps between constrained spaces with the log absolute
determinant of their Jacobian, for ``TransformedDistribution`` and ``biject_to``.

``t(x)`` maps forward, ``t.inv(y)`` back, ``t.log_abs_det_jacobian(x, y)`` is
``log |dy/dx|`` summed over the transform's event dims; ``domain``/``codomain`` are
constraints; ``ComposeTransform([a, b])`` is ``b(a(x))``.

>>> import autograd_compile as acg
>>> from autograd_compile.distributions.transforms import ExpTransform, AffineTransform
>>> t = AffineTransform(1.0, 2.0)
>>> t(acg.tensor([1.0])).tolist(), t.inv(acg.tensor([3.0])).tolist()
([3.0], [1.0])
"""
from __future__ import annotations

import math
import numbers
import operator
from functools import reduce
from typing import Any

import autograd_compile as acg
from autograd_compile.nn import functional as F
from autograd_compile.tensor import Tensor

from . import constraints
from .utils import (broadcast_shapes, cholesky, diag_embed, diagonal, tril_matrix_to_vec,
                    vec_to_tril_matrix)

__all__ = [
    "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
    "CorrCholeskyTransform", "CumulativeDistributionTransform", "ExpTransform",
    "IndependentTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
    "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform",
    "Transform", "identity_transform",
]


def _sum_rightmost(value: Any, dim: int) -> Any:
    """``value`` summed over its rightmost ``dim`` dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


class Transform:
    """An invertible map ``y = t(x)`` with ``log |det dy/dx|``; ``cache_size=1`` remembers
    the last pair so ``t.inv(t(x))`` returns ``x`` itself."""

    bijective = False
    domain: Any = constraints.real
    codomain: Any = constraints.real

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv: Any = None
        self._cached_x_y: tuple = (None, None)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_inv"] = None
        return state

    @property
    def event_dim(self) -> int:
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self) -> "Transform":
        """The inverse transform (``t.inv.inv is t``)."""
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            inv = _InverseTransform(self)
            import weakref
            self._inv = weakref.ref(inv)
        return inv

    @property
    def sign(self) -> int:
        """+1 or -1: whether a monotone scalar transform increases or decreases."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> "Transform":
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other: Any) -> bool:
        return self is other

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = x, y
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = x, y
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def forward_shape(self, shape: Any) -> Any:
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        return shape


class _InverseTransform(Transform):
    """``t.inv``: swaps the directions (and negates the log-determinant)."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return self._inv.codomain

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return self._inv.domain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self._inv.bijective

    @property
    def sign(self) -> int:
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: Any) -> Any:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """``parts`` applied left to right; an empty list is the identity."""

    def __init__(self, parts: list, cache_size: int = 0) -> None:
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self) -> Any:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(p.bijective for p in self.parts)

    @property
    def sign(self) -> int:
        return reduce(operator.mul, (p.sign for p in self.parts), 1)

    @property
    def inv(self) -> Transform:
        inv = self._inv() if self._inv is not None else None
        if inv is None:
            import weakref
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = weakref.ref(inv)
            inv._inv = weakref.ref(self)
        return inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else ComposeTransform(self.parts, cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return acg.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms, event_dim = [], self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(a, b),
                                        event_dim - part.domain.event_dim))
            event_dim += part.codomain.event_dim - part.domain.event_dim
        return reduce(operator.add, terms)

    def forward_shape(self, shape: Any) -> Any:
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: Any) -> Any:
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        return "ComposeTransform(\n    " + ",\n    ".join(map(repr, self.parts)) + "\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with its rightmost ``reinterpreted_batch_ndims`` dims one event."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else IndependentTransform(
            self.base_transform, self.reinterpreted_batch_ndims, cache_size)

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return self.base_transform.bijective

    @property
    def sign(self) -> int:
        return self.base_transform.sign

    def _call(self, x: Tensor) -> Tensor:
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                              self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_transform!r}, " \
               f"{self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape: Any) -> Any:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` dims to ``out_shape`` (a unit Jacobian)."""

    bijective = True

    def __init__(self, in_shape: Any, out_shape: Any, cache_size: int = 0) -> None:
        self.in_shape, self.out_shape = acg.Size(in_shape), acg.Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else ReshapeTransform(
            self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x: Tensor) -> Tensor:
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y: Tensor) -> Tensor:
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x.new_zeros(tuple(x.shape[:x.dim() - len(self.in_shape)]))

    def _swap(self, shape: Any, src: Any, dst: Any) -> Any:
        if len(shape) < len(src):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(src)
        if tuple(shape[cut:]) != tuple(src):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got "
                             f"{tuple(src)}")
        return tuple(shape[:cut]) + tuple(dst)

    def forward_shape(self, shape: Any) -> Any:
        return self._swap(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: Any) -> Any:
        return self._swap(shape, self.out_shape, self.in_shape)


class _Elementwise(Transform):
    """A parameterless elementwise bijection: equal to any other instance of its class."""

    bijective = True
    sign = +1

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, type(self))

    __hash__ = object.__hash__


class ExpTransform(_Elementwise):
    r"""``y = exp(x)``."""

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return x.exp()

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.exponent = exponent if isinstance(exponent, Tensor) else acg.tensor(float(exponent))

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else PowerTransform(self.exponent,
                                                                          cache_size)

    @property
    def sign(self) -> Any:
        return self.exponent.sign()

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, PowerTransform) and bool((self.exponent == other.exponent).all())

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent.to(x.dtype))

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent.to(y.dtype))

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent.to(x.dtype) * y / x).abs().log()

    def forward_shape(self, shape: Any) -> Any:
        return tuple(broadcast_shapes(shape, getattr(self.exponent, "shape", ())))

    inverse_shape = forward_shape


class SigmoidTransform(_Elementwise):
    """``y = 1 / (1 + exp(-x))``."""

    codomain = constraints.unit_interval

    def _call(self, x: Tensor) -> Tensor:
        return _clipped_sigmoid(x)

    def _inverse(self, y: Tensor) -> Tensor:
        eps = acg.finfo(y.dtype).eps
        y = y.clamp(min=eps, max=1 - eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x) - F.softplus(x)


def _clipped_sigmoid(x: Tensor) -> Tensor:
    """sigmoid kept inside (0, 1) by the dtype's smallest values."""
    info = acg.finfo(x.dtype)
    return x.sigmoid().clamp(min=info.tiny, max=1.0 - info.eps)


class SoftplusTransform(_Elementwise):
    """``y = log(1 + exp(x))``."""

    codomain = constraints.positive

    def _call(self, x: Tensor) -> Tensor:
        return F.softplus(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -F.softplus(-x)


class TanhTransform(_Elementwise):
    """``y = tanh(x)``."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x: Tensor) -> Tensor:
        return x.tanh()

    def _inverse(self, y: Tensor) -> Tensor:
        return 0.5 * (y.log1p() - (-y).log1p())  # atanh

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        # log(1 - tanh(x)^2), written stably
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not bijective: the inverse returns the positive root)."""

    codomain = constraints.positive

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.abs()

    def _inverse(self, y: Tensor) -> Tensor:
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``; ``event_dim`` dims make one event."""

    bijective = True

    def __init__(self, loc: Any, scale: Any, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    @property
    def event_dim(self) -> int:
        return self._event_dim

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return constraints.real if self._event_dim == 0 else constraints.independent(
            constraints.real, self._event_dim)

    codomain = domain  # type: ignore[assignment]

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else AffineTransform(
            self.loc, self.scale, self._event_dim, cache_size)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        return all(bool(a == b) if isinstance(a, numbers.Number) and isinstance(b, numbers.Number)
                   else bool((acg.as_tensor(a) == acg.as_tensor(b)).all())
                   for a, b in ((self.loc, other.loc), (self.scale, other.scale)))

    __hash__ = object.__hash__

    @property
    def sign(self) -> Any:
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        shape = tuple(x.shape)
        if isinstance(self.scale, numbers.Real):
            result = acg.full_like(x, math.log(abs(self.scale)))
        else:
            result = self.scale.abs().log()
        if self._event_dim:
            result = result.reshape(tuple(result.shape[:result.dim() - self._event_dim])
                                    + (-1,)).sum(-1)
            shape = shape[:len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape: Any) -> Any:
        return tuple(broadcast_shapes(shape, getattr(self.loc, "shape", ()),
                                          getattr(self.scale, "shape", ())))

    inverse_shape = forward_shape


class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex by ``exp`` and normalising (not bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        probs = (x - x.max(-1, keepdim=True)[0]).exp()
        return probs / probs.sum(-1, keepdim=True)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    inverse_shape = forward_shape


def _pad_one(x: Tensor, front: bool) -> Tensor:
    """``x`` with a 1 added at the front or the back of its last dim."""
    one = acg.ones(tuple(x.shape[:-1]) + (1,), dtype=x.dtype)
    return acg.cat([one, x] if front else [x, one], -1)


class StickBreakingTransform(Transform):
    """Unconstrained vectors of length K-1 to the K-simplex by stick breaking (bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    @staticmethod
    def _offset(n: int, like: Tensor) -> Tensor:
        return (n + 1) - acg.ones(n, dtype=like.dtype).cumsum(-1)

    def _call(self, x: Tensor) -> Tensor:
        z = _clipped_sigmoid(x - self._offset(x.shape[-1], x).log())
        z_cumprod = (1 - z).cumprod(-1)
        return _pad_one(z, front=False) * _pad_one(z_cumprod, front=True)

    def _inverse(self, y: Tensor) -> Tensor:
        y_crop = y[..., :-1]
        offset = y.shape[-1] - acg.ones(y_crop.shape[-1], dtype=y.dtype).cumsum(-1)
        sf = (1 - y_crop.cumsum(-1)).clamp(min=acg.finfo(y.dtype).tiny)
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        x = x - self._offset(x.shape[-1], x).log()
        return (-x - F.softplus(-x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Unconstrained matrices to lower-triangular ones with a positive (exp) diagonal."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.tril(-1) + diag_embed(diagonal(x).exp())

    def _inverse(self, y: Tensor) -> Tensor:
        return y.tril(-1) + diag_embed(diagonal(y).log())


class PositiveDefiniteTransform(Transform):
    """Unconstrained matrices to positive-definite ones: ``L L^T`` of the lower Cholesky map."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        low = LowerCholeskyTransform()(x)
        return low @ low.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return LowerCholeskyTransform().inv(cholesky(y))


class CorrCholeskyTransform(Transform):
    """Vectors of length D(D-1)/2 to Cholesky factors of D x D correlation matrices
    (tanh onto (-1, 1), then stick breaking along each row; bijective)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, CorrCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x: Tensor) -> Tensor:
        eps = acg.finfo(x.dtype).eps
        x = x.tanh().clamp(min=-1 + eps, max=1 - eps)
        r = vec_to_tril_matrix(x, diag=-1)
        z1m_cumprod_sqrt = (1 - r * r).sqrt().cumprod(-1)
        r = r + acg.eye(r.shape[-1], dtype=r.dtype)
        return r * _pad_one(z1m_cumprod_sqrt[..., :-1], front=True)

    def _inverse(self, y: Tensor) -> Tensor:
        y_cumsum = 1 - (y * y).cumsum(-1)
        shifted = _pad_one(y_cumsum[..., :-1], front=True)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(shifted, diag=-1).sqrt()
        return 0.5 * (t.log1p() - (-t).log1p())

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor, intermediates: Any = None) -> Tensor:
        y1m_cumsum = 1 - (y * y).cumsum(-1)
        stick = 0.5 * tril_matrix_to_vec(y1m_cumsum, diag=-2).log().sum(-1)
        tanh = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(-1)
        return stick + tanh

    def forward_shape(self, shape: Any) -> Any:
        if len(shape) < 1:
            raise ValueError("Too small shape")
        m = shape[-1]
        n = round((0.25 + 2 * m) ** 0.5 + 0.5)
        if n * (n - 1) // 2 != m:
            raise ValueError("Input is not a flattend lower-diagonal number")
        return tuple(shape[:-1]) + (n, n)

    def inverse_shape(self, shape: Any) -> Any:
        if len(shape) < 2:
            raise ValueError("Too small shape")
        n = shape[-1]
        if shape[-2] != n:
            raise ValueError("Input is not square")
        return tuple(shape[:-2]) + (n * (n - 1) // 2,)


class CatTransform(Transform):
    """Transforms applied to consecutive pieces of ``dim`` (``lengths`` long each)."""

    def __init__(self, tseq: Any, dim: int = 0, lengths: Any = None, cache_size: int = 0
                 ) -> None:
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.transforms)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("CatTransform: as many lengths as transforms are needed")
        self.dim = dim

    @property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self) -> int:
        return sum(self.lengths)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else CatTransform(
            self.transforms, self.dim, self.lengths, cache_size)

    def _pieces(self, x: Tensor) -> list:
        if not -x.dim() <= self.dim < x.dim():
            raise ValueError(f"CatTransform: dim {self.dim} out of range for {x.dim()} dims")
        if x.shape[self.dim] != self.length:
            raise ValueError(f"CatTransform: size {x.shape[self.dim]} along dim {self.dim} is "
                             f"not the sum of lengths {self.length}")
        out, start = [], 0
        for length in self.lengths:
            out.append(x.narrow(self.dim, start, length))
            start += length
        return out

    def _call(self, x: Tensor) -> Tensor:
        return acg.cat([t(p) for t, p in zip(self.transforms, self._pieces(x))], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return acg.cat([t.inv(p) for t, p in zip(self.transforms, self._pieces(y))], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        parts = []
        for t, xs, ys in zip(self.transforms, self._pieces(x), self._pieces(y)):
            ladj = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < self.event_dim:
                ladj = _sum_rightmost(ladj, self.event_dim - t.event_dim)
            parts.append(ladj)
        dim = self.dim if self.dim < 0 else self.dim - x.dim()
        dim = dim + self.event_dim
        if dim < 0:
            return acg.cat(parts, dim)
        return reduce(operator.add, parts)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(Transform):
    """Transforms applied to the slices of ``dim``."""

    def __init__(self, tseq: Any, dim: int = 0, cache_size: int = 0) -> None:
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms, self.dim = list(tseq), dim

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else StackTransform(
            self.transforms, self.dim, cache_size)

    def _slices(self, z: Tensor) -> list:
        if z.shape[self.dim] != len(self.transforms):
            raise ValueError(f"StackTransform: size {z.shape[self.dim]} along dim {self.dim} "
                             f"is not the number of transforms {len(self.transforms)}")
        return [z.select(self.dim, i) for i in range(z.shape[self.dim])]

    def _call(self, x: Tensor) -> Tensor:
        return acg.stack([t(s) for s, t in zip(self._slices(x), self.transforms)], self.dim)

    def _inverse(self, y: Tensor) -> Tensor:
        return acg.stack([t.inv(s) for s, t in zip(self._slices(y), self.transforms)], self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return acg.stack([t.log_abs_det_jacobian(a, b) for t, a, b in
                          zip(self.transforms, self._slices(x), self._slices(y))], self.dim)

    @property
    def bijective(self) -> bool:  # type: ignore[override]
        return all(t.bijective for t in self.transforms)

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self) -> Any:  # type: ignore[override]
        return constraints.stack([t.codomain for t in self.transforms], self.dim)


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: a univariate distribution's support onto [0, 1]."""

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution: Any, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> Any:  # type: ignore[override]
        return self.distribution.support

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else CumulativeDistributionTransform(
            self.distribution, cache_size=cache_size)
