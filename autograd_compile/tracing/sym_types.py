"""Symbolic scalars (``SymInt``, ``SymFloat``, ``SymBool``), the public helpers on them,
and what their operators do when no mode intercepts."""
from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sympy
from sympy.logic.boolalg import BooleanAtom

from .prover import _fmt
from .sym_mode import _MODES, _mode_popped

if TYPE_CHECKING:
    from .shape_env import ShapeEnv


def _dispatch(func: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """Run ``func`` on ``args`` through the innermost mode, or compute it."""
    if not _MODES.stack:
        return _IMPLS[func](*args)
    types = tuple(dict.fromkeys(type(a) for a in args if is_symbolic(a)))
    with _mode_popped() as mode:  # so the handler's func(*args) computes
        return mode.__sym_dispatch__(func, types, args, {})


@dataclass(frozen=True, slots=True)
class SymNode:
    """The payload of a symbolic scalar: sympy ``expr``, its env and its hint."""

    expr: sympy.Basic
    shape_env: ShapeEnv
    hint: Any


class _SymBase:
    __slots__ = ("node", "__weakref__")

    def __init__(self, node: SymNode) -> None:
        self.node = node

    __hash__ = object.__hash__  # identity: SymInts are weak-dict keys

    def __repr__(self) -> str:
        return _fmt(self.node.expr)

    __str__ = __repr__

    @property
    def expr(self) -> sympy.Basic:
        return self.node.expr

    @property
    def shape_env(self) -> ShapeEnv:
        return self.node.shape_env


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float, SymInt, SymFloat))


def _is_boolish(x: object) -> bool:
    return isinstance(x, (bool, SymBool))


def _binary(func: Callable[..., Any], accepts: Callable[[object], bool]):
    """Forward and reflected dunder methods that dispatch ``func``."""
    def forward(self: _SymBase, other: object) -> Any:
        return _dispatch(func, (self, other)) if accepts(other) else NotImplemented

    def reflected(self: _SymBase, other: object) -> Any:
        return _dispatch(func, (other, self)) if accepts(other) else NotImplemented
    return forward, reflected


def _unary(func: Callable[..., Any]) -> Callable[[_SymBase], Any]:
    def method(self: _SymBase) -> Any:
        return _dispatch(func, (self,))
    return method


class _SymNumber(_SymBase):
    __slots__ = ()
    __hash__ = _SymBase.__hash__  # defining __eq__ below would reset it to None
    __add__, __radd__ = _binary(operator.add, _is_number)
    __sub__, __rsub__ = _binary(operator.sub, _is_number)
    __mul__, __rmul__ = _binary(operator.mul, _is_number)
    __floordiv__, __rfloordiv__ = _binary(operator.floordiv, _is_number)
    __mod__, __rmod__ = _binary(operator.mod, _is_number)
    __truediv__, __rtruediv__ = _binary(operator.truediv, _is_number)
    __pow__, __rpow__ = _binary(operator.pow, _is_number)
    __eq__ = _binary(operator.eq, _is_number)[0]
    __ne__ = _binary(operator.ne, _is_number)[0]
    __lt__ = _binary(operator.lt, _is_number)[0]
    __le__ = _binary(operator.le, _is_number)[0]
    __gt__ = _binary(operator.gt, _is_number)[0]
    __ge__ = _binary(operator.ge, _is_number)[0]
    __neg__ = _unary(operator.neg)
    __pos__ = _unary(operator.pos)
    __abs__ = _unary(abs)
    __bool__ = _unary(bool)
    __float__ = _unary(float)


class SymInt(_SymNumber):
    """A symbolic integer (a size).  Operators work with ints on either side.

    ``int(s)``/``operator.index(s)`` specialise (guard ``expr == hint``);
    ``bool(s)`` guards ``expr != 0``.  Constant results are plain ints.

    >>> from autograd_compile.tracing.shape_env import ShapeEnv
    >>> env = ShapeEnv(); s = env.create_symint(10)
    >>> (s + 2) * 3, s // 4, sym_max(s, 12), s * 0, s ** 2 - s * s
    (3*s0 + 6, floor(s0/4), Max(12, s0), 0, 0)
    """

    __slots__ = ()
    __int__ = _unary(int)
    __index__ = _unary(operator.index)


class SymFloat(_SymNumber):
    """A symbolic float, e.g. from ``s0 / 2``; ``float(f)`` guards its value.

    >>> from autograd_compile.tracing.shape_env import ShapeEnv
    >>> s = ShapeEnv().create_symint(3)
    >>> s / 2, hint_int(s) / 2, float(s / 2)
    (s0/2, 1.5, 1.5)
    """

    __slots__ = ()


class SymBool(_SymBase):
    """A symbolic boolean; ``bool(b)`` decides via the hint and records a guard.

    >>> from autograd_compile.tracing.shape_env import ShapeEnv
    >>> env = ShapeEnv(); s = env.create_symint(5)
    >>> b = (s > 3) & (s < 9)
    >>> b, bool(b), env.format_guards()
    ((s0 > 3) & (s0 < 9), True, ['(s0 > 3) & (s0 < 9)'])
    """

    __slots__ = ()
    __and__, __rand__ = _binary(operator.and_, _is_boolish)
    __or__, __ror__ = _binary(operator.or_, _is_boolish)
    __bool__ = _unary(bool)



def is_symbolic(x: object) -> bool:
    """``True`` for ``SymInt``/``SymFloat``/``SymBool``."""
    return isinstance(x, _SymBase)


def sym_max(a: Any, b: Any) -> Any:
    """``max`` that stays symbolic: ``sym_max(s0, 4)`` is ``Max(4, s0)``."""
    return _dispatch(sym_max, (a, b)) if is_symbolic(a) or is_symbolic(b) else max(a, b)


def sym_min(a: Any, b: Any) -> Any:
    """``min`` that stays symbolic: ``sym_min(s0, 4)`` is ``Min(4, s0)``."""
    return _dispatch(sym_min, (a, b)) if is_symbolic(a) or is_symbolic(b) else min(a, b)


def sym_not(a: bool | SymBool) -> bool | SymBool:
    """Logical not that stays symbolic (``~`` on Python bools means ``-x-1``)."""
    return _dispatch(sym_not, (a,)) if is_symbolic(a) else not a


def sym_int(x: Any) -> int | SymInt:
    """Truncate to an integer like ``int(x)``, without specialising symbols.

    A ``SymFloat`` guards only on its sign (to pick floor or ceiling).

    >>> from autograd_compile.tracing.shape_env import ShapeEnv
    >>> s = ShapeEnv().create_symint(7)
    >>> sym_int(s / 2), sym_int(s), sym_int(-2.5)
    (floor(s0/2), s0, -2)
    """
    if isinstance(x, SymFloat):
        return _dispatch(sym_int, (x,))
    return x if isinstance(x, SymInt) else int(x)


def guard_int(x: int | SymInt) -> int:
    """The concrete int, specialising (guarding ``expr == hint``) if symbolic."""
    return int(x)


def hint_int(x: int | SymInt) -> int:
    """The concrete int at the hints, recording *no* guard (for heuristics)."""
    return x.node.hint if isinstance(x, SymInt) else int(x)



def _env_of(args: tuple[Any, ...]) -> ShapeEnv:
    envs = {id(a.node.shape_env): a.node.shape_env for a in args if is_symbolic(a)}
    if len(envs) != 1:
        raise ValueError("symbolic values from different ShapeEnvs cannot be mixed")
    return next(iter(envs.values()))


def _num_expr(x: Any) -> sympy.Basic:
    if is_symbolic(x):
        return x.node.expr
    return sympy.Integer(x) if isinstance(x, int) else sympy.Float(x)


def _bool_expr(x: Any) -> sympy.Basic:
    return x.node.expr if is_symbolic(x) else sympy.true if x else sympy.false


def _hint(x: Any) -> Any:
    return x.node.hint if is_symbolic(x) else x


def _wrap(expr: sympy.Basic, hint: Any, env: ShapeEnv, kind: type) -> Any:
    """A Sym* result, or a plain Python value when ``expr`` folded to a constant."""
    if kind is SymBool:
        if isinstance(expr, BooleanAtom):
            return bool(expr)
        return SymBool(SymNode(expr, env, bool(hint)))
    if expr.is_number:  # constants are inlined as Python scalars
        return int(expr) if kind is SymInt else float(expr)
    return kind(SymNode(expr, env, hint))


def _nonzero_divisor(args: tuple[Any, ...]) -> None:
    if _hint(args[1]) == 0:
        raise ZeroDivisionError(f"symbolic division by zero (divisor {args[1]!r} has hint 0)")


def _nonneg_exponent(args: tuple[Any, ...]) -> None:
    if _hint(args[1]) < 0:  # int ** negative would be a float in Python
        raise ValueError(f"symbolic ** needs a non-negative exponent, got {args[1]!r}")


def _arith(sym_fn: Callable[..., Any], hint_fn: Callable[..., Any],
           kind: type | None = None, check: Callable[[tuple[Any, ...]], None] | None = None):
    """Implementation of an operator: build the expression and the hint."""
    def impl(*args: Any) -> Any:
        if check is not None:
            check(args)
        env = _env_of(args)
        is_float = any(isinstance(a, (float, SymFloat)) for a in args)
        result_kind = kind or (SymFloat if is_float else SymInt)
        to_expr = _bool_expr if result_kind is SymBool and sym_fn in _LOGICAL else _num_expr
        expr = sym_fn(*map(to_expr, args))
        return _wrap(expr, hint_fn(*map(_hint, args)), env, result_kind)
    return impl


_LOGICAL = (sympy.And, sympy.Or, sympy.Not)


def _decide(x: _SymBase, wrap: Callable[[Any], Any]) -> Any:
    """Conversion to a Python scalar: guard the value at the hint."""
    return wrap(x.node.shape_env.evaluate_expr(x.node.expr))


def _bool_impl(x: _SymBase) -> bool:
    if isinstance(x, SymBool):
        return _decide(x, bool)
    return bool(x.node.shape_env.evaluate_expr(sympy.Ne(x.node.expr, 0)))


def _sym_int_impl(x: SymFloat) -> int | SymInt:
    nonneg = bool(x >= 0)  # truncation is floor for x >= 0, ceiling below
    fn, hint_fn = (sympy.floor, _floor) if nonneg else (sympy.ceiling, _ceil)
    return _wrap(fn(x.node.expr), hint_fn(x.node.hint), x.node.shape_env, SymInt)


def _floor(v: float) -> int:
    return int(v // 1)


def _ceil(v: float) -> int:
    return -int(-v // 1)


def _floordiv_expr(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    return sympy.floor(a / b)  # exact for all signs, like Python's //


_IMPLS: dict[Callable[..., Any], Callable[..., Any]] = {
    operator.add: _arith(operator.add, operator.add),
    operator.sub: _arith(operator.sub, operator.sub),
    operator.mul: _arith(operator.mul, operator.mul),
    operator.floordiv: _arith(_floordiv_expr, operator.floordiv, check=_nonzero_divisor),
    operator.mod: _arith(sympy.Mod, operator.mod, check=_nonzero_divisor),
    operator.truediv: _arith(operator.truediv, operator.truediv, SymFloat, _nonzero_divisor),
    operator.pow: _arith(operator.pow, operator.pow, check=_nonneg_exponent),
    sym_max: _arith(sympy.Max, max),
    sym_min: _arith(sympy.Min, min),
    operator.neg: _arith(operator.neg, operator.neg),
    operator.pos: _arith(operator.pos, operator.pos),
    abs: _arith(sympy.Abs, abs),
    operator.eq: _arith(sympy.Eq, operator.eq, SymBool),
    operator.ne: _arith(sympy.Ne, operator.ne, SymBool),
    operator.lt: _arith(sympy.Lt, operator.lt, SymBool),
    operator.le: _arith(sympy.Le, operator.le, SymBool),
    operator.gt: _arith(sympy.Gt, operator.gt, SymBool),
    operator.ge: _arith(sympy.Ge, operator.ge, SymBool),
    operator.and_: _arith(sympy.And, operator.and_, SymBool),
    operator.or_: _arith(sympy.Or, operator.or_, SymBool),
    sym_not: _arith(sympy.Not, operator.not_, SymBool),
    bool: _bool_impl,
    int: lambda x: _decide(x, int),
    operator.index: lambda x: _decide(x, int),
    float: lambda x: _decide(x, float),
    sym_int: _sym_int_impl,
}
