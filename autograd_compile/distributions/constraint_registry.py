"""``biject_to`` and ``transform_to``: from a constraint to a transform whose domain is the
unconstrained reals and whose codomain is that constraint (``biject_to`` a bijection, for
HMC-style reparameterisation; ``transform_to`` any such map, for optimisation).

>>> import autograd_compile as acg
>>> from autograd_compile.distributions import biject_to, constraints
>>> t = biject_to(constraints.positive)
>>> [round(v, 4) for v in t(acg.tensor([0.0, 1.0])).tolist()]
[1.0, 2.7183]
"""
from __future__ import annotations

from typing import Any, Callable

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """A map from constraint classes to factories ``constraint -> Transform``."""

    def __init__(self) -> None:
        self._registry: dict = {}

    def register(self, constraint: Any, factory: Callable | None = None) -> Any:
        """Register ``factory`` for a constraint class (or an instance's class); usable as a
        decorator when ``factory`` is omitted."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint,
                                                              constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint: Any) -> transforms.Transform:
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(*cons: Any) -> Callable:
    """Register one factory on both registries for several constraints."""
    def deco(factory: Callable) -> Callable:
        for c in cons:
            biject_to.register(c, factory)
            transform_to.register(c, factory)
        return factory
    return deco


@_both(constraints.real)
def _to_real(constraint: Any) -> transforms.Transform:
    return transforms.identity_transform


def _independent_factory(registry: ConstraintRegistry) -> Callable:
    def factory(constraint: Any) -> transforms.Transform:
        base = registry(constraint.base_constraint)
        return transforms.IndependentTransform(base, constraint.reinterpreted_batch_ndims)
    return factory


biject_to.register(constraints.independent, _independent_factory(biject_to))
transform_to.register(constraints.independent, _independent_factory(transform_to))


@_both(constraints.positive, constraints.nonnegative)
def _to_greater_than(constraint: Any) -> transforms.Transform:
    """``lower_bound + exp(x)``."""
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than(0.0))
def _to_less_than(constraint: Any) -> transforms.Transform:
    """``upper_bound - exp(x)``."""
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


def _is_number(value: Any, target: float) -> bool:
    return isinstance(value, (int, float)) and value == target


@_both(constraints.interval(0.0, 1.0), constraints.half_open_interval(0.0, 1.0))
def _to_interval(constraint: Any) -> transforms.Transform:
    """``sigmoid`` (onto (0, 1)), then an affine map onto (lower, upper)."""
    low, high = constraint.lower_bound, constraint.upper_bound
    if _is_number(low, 0) and _is_number(high, 1):
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(low, high - low)])


biject_to.register(constraints.simplex, lambda c: transforms.StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: transforms.SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda c: transforms.LowerCholeskyTransform())
transform_to.register(constraints.positive_definite,
                      lambda c: transforms.PositiveDefiniteTransform())
transform_to.register(constraints.positive_semidefinite,
                      lambda c: transforms.PositiveDefiniteTransform())
_both(constraints.corr_cholesky)(lambda c: transforms.CorrCholeskyTransform())


def _cat_factory(registry: ConstraintRegistry) -> Callable:
    def factory(constraint: Any) -> transforms.Transform:
        return transforms.CatTransform([registry(c) for c in constraint.cseq], constraint.dim,
                                       constraint.lengths)
    return factory


def _stack_factory(registry: ConstraintRegistry) -> Callable:
    def factory(constraint: Any) -> transforms.Transform:
        return transforms.StackTransform([registry(c) for c in constraint.cseq],
                                         constraint.dim)
    return factory


for _reg in (biject_to, transform_to):
    _reg.register(constraints.cat, _cat_factory(_reg))
    _reg.register(constraints.stack, _stack_factory(_reg))
