"""Constraints: where a parameter or a sample may lie (``constraints.positive``,
``constraints.interval(0, 1)``, ``constraints.simplex`` ...).

``check(value)`` returns a bool tensor over the batch (event dims reduced), which
``validate_args`` turns into PyTorch's ValueError; ``biject_to``/``transform_to`` map an
unconstrained real tensor onto each constraint.

>>> import autograd_compile as acg
>>> from autograd_compile.distributions import constraints
>>> constraints.positive.check(acg.tensor([1.0, -1.0])).tolist()
[True, False]
"""
from __future__ import annotations

from typing import Any, Callable

import autograd_compile as acg

__all__ = [
    "Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property",
    "greater_than", "greater_than_eq", "independent", "integer_interval", "interval",
    "half_open_interval", "is_dependent", "less_than", "lower_cholesky", "lower_triangular",
    "multinomial", "nonnegative", "nonnegative_integer", "one_hot", "positive",
    "positive_semidefinite", "positive_definite", "positive_integer", "real", "real_vector",
    "simplex", "square", "stack", "symmetric", "unit_interval",
]


class Constraint:
    """A region of a space: ``check(value)`` says, per batch element, whether value lies in it.
    ``is_discrete`` marks integer supports; ``event_dim`` how many rightmost dims make one
    point."""

    is_discrete = False
    event_dim = 0

    def check(self, value: Any) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.__class__.__name__[1:] + "()"


class _Dependent(Constraint):
    """A placeholder whose support depends on other parameters (not checkable)."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented
                 ) -> None:
        self._is_discrete, self._event_dim = is_discrete, event_dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        if self._is_discrete is NotImplemented:
            raise NotImplementedError(".is_discrete cannot be determined statically")
        return self._is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        if self._event_dim is NotImplemented:
            raise NotImplementedError(".event_dim cannot be determined statically")
        return self._event_dim

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented
                 ) -> "_Dependent":
        return _Dependent(is_discrete=self._is_discrete if is_discrete is NotImplemented
                          else is_discrete,
                          event_dim=self._event_dim if event_dim is NotImplemented else event_dim)

    def check(self, x: Any) -> Any:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a (possibly wrapped) dependent placeholder."""
    if isinstance(constraint, _IndependentConstraint):
        constraint = constraint.base_constraint
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property of a distribution whose value is a constraint depending on its parameters
    (``Uniform.support`` is ``interval(low, high)``)."""

    def __init__(self, fn: Callable | None = None, *, is_discrete: Any = NotImplemented,
                 event_dim: Any = NotImplemented) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn: Callable) -> "_DependentProperty":  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """``base_constraint`` with its rightmost ``reinterpreted_batch_ndims`` dims one event."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError("reinterpreted_batch_ndims must be a non-negative int")
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value: Any) -> Any:
        result = self.base_constraint.check(value)
        if result.dim() < self.reinterpreted_batch_ndims:
            expected = self.base_constraint.event_dim + self.reinterpreted_batch_ndims
            raise ValueError(f"Expected value.dim() >= {expected} but got {value.dim()}")
        n = self.reinterpreted_batch_ndims
        return result.reshape(tuple(result.shape[:result.dim() - n]) + (-1,)).all(-1)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(Constraint):
    """The component distribution's support, checked per mixture component."""

    def __init__(self, base_constraint: Constraint) -> None:
        self.base_constraint = base_constraint

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self.base_constraint.event_dim

    def check(self, value: Any) -> Any:
        return self.base_constraint.check(value)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.base_constraint!r})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Any) -> Any:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value: Any) -> Any:
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _IntegerInterval(Constraint):
    """Integers in [lower_bound, upper_bound]."""

    is_discrete = True

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Any) -> Any:
        return ((value % 1) == 0) & (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerLessThan(Constraint):
    is_discrete = True

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Any) -> Any:
        return ((value % 1) == 0) & (value <= self.upper_bound)


class _IntegerGreaterThan(Constraint):
    """Integers >= lower_bound."""

    is_discrete = True

    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Any) -> Any:
        return ((value % 1) == 0) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Real(Constraint):
    def check(self, value: Any) -> Any:
        return value == value  # False only for NaN


class _GreaterThan(Constraint):
    def __init__(self, lower_bound: Any) -> None:
        self.lower_bound = lower_bound

    def check(self, value: Any) -> Any:
        return self.lower_bound < value

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value: Any) -> Any:
        return self.lower_bound <= value

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, value: Any) -> Any:
        return value < self.upper_bound

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    """[lower_bound, upper_bound]."""

    def __init__(self, lower_bound: Any, upper_bound: Any) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value: Any) -> Any:
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    """[lower_bound, upper_bound)."""

    def check(self, value: Any) -> Any:
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self) -> str:
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    """Non-negative vectors summing to one (within 1e-6)."""

    event_dim = 1

    def check(self, value: Any) -> Any:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Non-negative integer counts summing to at most ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound: int) -> None:
        self.upper_bound = upper_bound

    def check(self, x: Any) -> Any:
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Any) -> Any:
        return (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _LowerCholesky(Constraint):
    """Lower triangular with a positive diagonal."""

    event_dim = 2

    def check(self, value: Any) -> Any:
        from .utils import diagonal
        tril = (value.tril() == value).reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)
        return tril & (diagonal(value) > 0).all(-1)


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: rows of unit norm."""

    event_dim = 2

    def check(self, value: Any) -> Any:
        tol = acg.finfo(value.dtype).eps * value.shape[-1] * 10
        row_norm = (value * value).sum(-1).sqrt()
        unit = ((row_norm - 1).abs() <= tol).all(-1)
        return _LowerCholesky().check(value) & unit


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Any) -> Any:
        return acg.full(tuple(value.shape[:-2]), value.shape[-1] == value.shape[-2],
                        dtype=acg.bool)


class _Symmetric(_Square):
    def check(self, value: Any) -> Any:
        square = super().check(value)
        if not square.all():
            return square
        close = ((value - value.mT).abs() <= 1e-6 + 1e-5 * value.mT.abs())
        return close.reshape(tuple(value.shape[:-2]) + (-1,)).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: Any) -> Any:
        sym = super().check(value)
        if not sym.all():
            return sym
        import numpy as np
        eig = np.linalg.eigvalsh(np.asarray(value.detach()))
        return acg.tensor((eig >= 0).all(-1))


class _PositiveDefinite(_Symmetric):
    def check(self, value: Any) -> Any:
        sym = super().check(value)
        if not sym.all():
            return sym
        import numpy as np
        eig = np.linalg.eigvalsh(np.asarray(value.detach()))
        return acg.tensor((eig > 0).all(-1))


class _Cat(Constraint):
    """Constraints applied to the pieces of a tensor split along ``dim``."""

    def __init__(self, cseq: Any, dim: int = 0, lengths: Any = None) -> None:
        self.cseq = list(cseq)
        self.lengths = list(lengths) if lengths is not None else [1] * len(self.cseq)
        if len(self.lengths) != len(self.cseq):
            raise ValueError("cat: as many lengths as constraints are needed")
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Any) -> Any:
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start += length
        return acg.cat(checks, self.dim)


class _Stack(Constraint):
    """Constraints applied to the slices of a tensor along ``dim``."""

    def __init__(self, cseq: Any, dim: int = 0) -> None:
        self.cseq, self.dim = list(cseq), dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        dim = max(c.event_dim for c in self.cseq)
        return dim + 1 if self.dim + dim < 0 else dim

    def check(self, value: Any) -> Any:
        n = value.shape[self.dim]
        return acg.stack([c.check(value.select(self.dim, i)) for c, i in
                          zip(self.cseq, range(n))], self.dim)


# public names: classes as PyTorch's constraints module spells them, and the singletons
dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
