"""Symbolic sizes: ``SymInt``/``SymBool`` over sympy, guarded by a ``ShapeEnv``.

A compiled graph traced with concrete sizes must be retraced when sizes change,
unless the sizes were *symbolic* while tracing.  This module supplies the
symbolic integers (modelled on PyTorch's ``SymInt``/``ShapeEnv``, written from
scratch) and records every decision a trace takes on them as a *guard*.

Tutorial
--------
1. A ``ShapeEnv`` owns the symbols.  ``create_symint(hint, source)`` makes a
   positive integer symbol ``s0, s1, ...`` whose *hint* is the concrete size
   seen while tracing.  Sizes 0 and 1 are specialised: they stay Python ints.

>>> env = ShapeEnv()
>>> n = env.create_symint(6, source="sizes[0]")
>>> n, env.create_symint(1)
(s0, 1)

2. Arithmetic builds sympy expressions; every result carries its hint, and
   results that are constant fold back to plain Python ints.

>>> m = n * 2 + 1
>>> m, hint_int(m), n - n, type(n - n).__name__
(2*s0 + 1, 13, 0, 'int')

3. Branching on a symbolic value decides via the hint and records a guard;
   facts true for every size (``n >= 1``) record nothing.

>>> if m > 10:
...     branch = "big"
>>> bool(n >= 2), env.format_guards()
(True, ['2*s0 + 1 > 10'])

4. ``check_guards`` answers "can the graph traced for 6 be reused for this
   size?"; ``failing_guard`` says why not.

>>> env.check_guards([7]), env.check_guards([4])
(True, False)
>>> env.failing_guard([4])
'2*s0 + 1 > 10 is false for s0=4 (sizes[0])'

5. ``int(n)`` (or ``operator.index``) specialises: it guards ``s0 == 6``.

>>> int(n), env.format_guards()[-1]
(6, 's0 == 6')

Design notes
------------
* ``SymInt``/``SymFloat``/``SymBool`` hold one field, ``node`` (a ``SymNode``
  with ``expr``, ``shape_env`` and ``hint``).  Hashing is by identity, so they
  can be dict and weak-dict keys; ``==`` builds a ``SymBool`` instead.
* Every operator goes through ``_dispatch``: with a ``SymDispatchMode`` active,
  the mode's ``__sym_dispatch__(func, types, args, kwargs)`` runs instead (with
  the mode popped, so ``func(*args)`` computes the real result).
* ``SymProxyTracker``/``set_proxy``/``get_proxy`` map symbols to a tracer's
  proxies through weak references only.
* ``statically_known`` stays cheap (it runs on every branch a trace takes): a
  relation between polynomials is decided by the coefficient signs of
  ``lhs - rhs`` with each size written ``lower + t`` (``t >= 0``); floor, Mod,
  Max... are never simplified (``sympy.simplify`` took up to a second per fact
  and nearly always gave up), so such a branch is guarded instead, which is
  always sound. Proofs are shared by every ``ShapeEnv`` (keyed by the condition
  and its symbols' lower bounds).
"""
from __future__ import annotations

import logging
import operator
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import sympy
from sympy.logic.boolalg import Boolean, BooleanAtom

__all__ = [
    "Guard", "ShapeEnv", "SymNode", "SymInt", "SymFloat", "SymBool",
    "SymDispatchMode", "current_sym_dispatch_mode", "SymProxyTracker",
    "set_proxy", "get_proxy", "has_proxy", "sym_max", "sym_min", "sym_not",
    "sym_int", "guard_int", "hint_int", "is_symbolic",
]

log = logging.getLogger("autograd_compile.dynamic")

Values = Mapping[sympy.Symbol | str, int] | Sequence[int]


# --------------------------------------------------------------------------- #
# ShapeEnv
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class Guard:
    """One recorded decision.

    ``expr`` is what was decided (a boolean or an integer expression), ``value``
    what it was decided to, ``condition`` the sympy boolean that must hold for
    a trace to be reused, and ``text`` a readable form of ``condition``.
    """

    expr: sympy.Basic
    value: Any
    condition: Boolean
    text: str


def _fmt(expr: sympy.Basic) -> str:
    """Readable text: relations as ``a op b`` rather than ``Eq(a, b)``."""
    if isinstance(expr, sympy.core.relational.Relational):
        return f"{sympy.sstr(expr.lhs)} {expr.rel_op} {sympy.sstr(expr.rhs)}"
    return sympy.sstr(expr)


# For ``lhs op rhs``: the sign classes of ``lhs - rhs`` proving it / disproving it.
# Classes: "pos" (> 0), "nonneg" (>= 0), "neg" (< 0), "nonpos" (<= 0), "zero" (== 0).
_SIGN_FACTS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    ">": (frozenset({"pos"}), frozenset({"nonpos", "neg", "zero"})),
    ">=": (frozenset({"pos", "nonneg", "zero"}), frozenset({"neg"})),
    "<": (frozenset({"neg"}), frozenset({"nonneg", "pos", "zero"})),
    "<=": (frozenset({"neg", "nonpos", "zero"}), frozenset({"pos"})),
    "==": (frozenset({"zero"}), frozenset({"pos", "neg"})),
    "!=": (frozenset({"pos", "neg"}), frozenset({"zero"})),
}


def _poly_sign(diff: sympy.Expr, dummies: frozenset) -> str | None:
    """Sign class of an expanded polynomial in variables that are all ``>= 0``.

    Every monomial is then ``>= 0``, so coefficients of one sign decide it (the
    constant term is the value at 0). A cheap stand-in for sympy's assumption
    system (``is_positive`` on a sum takes ~20 ms); mixed signs stay unknown.

    >>> t = sympy.Dummy("t", nonnegative=True)
    >>> _poly_sign(sympy.expand((t + 2) * (t + 3) - 6), frozenset({t}))
    'nonneg'
    """
    if diff.is_Number:
        return "zero" if diff == 0 else "pos" if diff > 0 else "neg"
    if not diff.free_symbols <= dummies:
        return None
    terms = diff.as_coefficients_dict()
    const = terms.get(sympy.S.One, 0)
    coeffs = [c for m, c in terms.items() if m is not sympy.S.One]
    if not all(c.is_Rational for c in coeffs) or not _monomials(terms):
        return None
    if all(c >= 0 for c in coeffs):
        return "pos" if const > 0 else "nonneg" if const == 0 else None
    if all(c <= 0 for c in coeffs):
        return "neg" if const < 0 else "nonpos" if const == 0 else None
    return None


def _monomials(terms: dict) -> bool:
    """Every key a product of variables to non-negative integer powers."""
    for m in terms:
        for f in sympy.Mul.make_args(m):
            base, exp = f.as_base_exp()
            if not (base.is_Symbol or base is sympy.S.One) or not (exp.is_Integer and exp >= 0):
                return False
    return True


_OPAQUE = (sympy.floor, sympy.ceiling, sympy.Mod, sympy.Max, sympy.Min, sympy.Abs)
# statically_known results shared by every ShapeEnv: a proof depends only on the
# condition and its symbols' lower bounds (symbols of equal name are equal in sympy)
_PROOFS: dict[tuple, bool | None] = {}
_PROOFS_MAX = 8192


def _holds(cond: Boolean, subs: dict[sympy.Symbol, sympy.Integer]) -> bool:
    """``cond`` at concrete values; undefined (division by zero) counts as false."""
    try:
        return cond.xreplace(subs) is sympy.true
    except (ArithmeticError, ValueError, TypeError):
        return False


class ShapeEnv:
    """Owns the size symbols of one trace, their hints and the guards on them.

    >>> env = ShapeEnv()
    >>> s = env.create_symbol(5, "x.size(0)")
    >>> s, env.var_to_val[s], env.sources[s]
    (s0, 5, 'x.size(0)')
    """

    def __init__(self) -> None:
        self.var_to_val: dict[sympy.Symbol, int] = {}
        self.sources: dict[sympy.Symbol, str] = {}
        self.var_to_lower: dict[sympy.Symbol, int] = {}  # 2 for specialised 0/1
        self.guards: list[Guard] = []
        self._guard_conditions: set[Boolean] = set()
        self._by_source: dict[str, sympy.Symbol] = {}
        self._shift: dict[sympy.Symbol, sympy.Expr] = {}
        self._static_cache: dict[Boolean, bool | None] = {}
        self._hint_subs: dict[sympy.Symbol, sympy.Integer] = {}

    # -- symbols ---------------------------------------------------------- #
    def create_symbol(self, hint: int, source: str = "", *, lower: int = 1) -> sympy.Symbol:
        """A fresh positive-integer symbol ``s<n>`` with concrete value ``hint``.

        A non-empty ``source`` already seen returns that source's symbol.
        ``lower`` is the smallest value the symbol may take (checked by
        ``check_guards``).

        >>> env = ShapeEnv()
        >>> env.create_symbol(3, "a") is env.create_symbol(3, "a")
        True
        """
        if isinstance(hint, bool) or not isinstance(hint, int) or hint < lower:
            raise ValueError(f"size hint must be an int >= {lower}, got {hint!r}")
        if source and source in self._by_source:
            sym = self._by_source[source]
            if self.var_to_val[sym] != hint:
                raise ValueError(f"{source} already has hint {self.var_to_val[sym]}, not {hint}")
            return sym
        sym = sympy.Symbol(f"s{len(self.var_to_val)}", integer=True, positive=True)
        self.var_to_val[sym] = hint
        self._hint_subs[sym] = sympy.Integer(hint)
        self.var_to_lower[sym] = lower
        self.sources[sym] = source
        # Substituting s = lower + t (t >= 0) lets sympy prove bound facts.
        self._shift[sym] = lower + sympy.Dummy(f"t_{sym}", integer=True, nonnegative=True)
        if source:
            self._by_source[source] = sym
        return sym

    def create_symint(self, hint: int, source: str = "") -> SymInt | int:
        """A ``SymInt`` for a size, or the plain int for sizes 0 and 1.

        0/1 are specialised (as in PyTorch) because they change semantics
        (empty tensors, broadcasting); hence other symbols are known ``>= 2``.

        >>> env = ShapeEnv()
        >>> env.create_symint(0), env.create_symint(1), env.create_symint(8)
        (0, 1, s0)
        """
        if isinstance(hint, bool) or not isinstance(hint, int) or hint < 0:
            raise ValueError(f"a size must be a non-negative int, got {hint!r}")
        if hint in (0, 1):
            return hint
        sym = self.create_symbol(hint, source, lower=2)
        return SymInt(SymNode(sym, self, hint))

    @property
    def symbols(self) -> list[sympy.Symbol]:
        """All symbols, in creation order (the order ``check_guards`` expects)."""
        return list(self.var_to_val)

    # -- evaluation ------------------------------------------------------- #
    def size_hint(self, expr: sympy.Basic | SymInt | int) -> int:
        """The value of an integer expression at the hints (records no guard).

        >>> env = ShapeEnv(); s = env.create_symbol(7)
        >>> env.size_hint(s // 2 + 1)
        4
        """
        if isinstance(expr, int):
            return expr
        if isinstance(expr, SymInt):
            expr = expr.node.expr
        value = sympy.sympify(expr).xreplace(self._hint_subs)
        if not value.is_Integer:
            raise TypeError(f"{expr} is not an integer expression (got {value})")
        return int(value)

    def simplify(self, expr: sympy.Basic) -> sympy.Basic:
        """``sympy.simplify`` under the symbols' assumptions (positive ints).

        >>> env = ShapeEnv(); s = env.create_symbol(4)
        >>> env.simplify(sympy.Mod(2 * s + 1, 2) + sympy.Abs(s))
        s0 + 1
        """
        return sympy.simplify(sympy.sympify(expr))

    def statically_known(self, cond: Boolean) -> bool | None:
        """``True``/``False`` if ``cond`` holds/fails for *all* allowed sizes.

        >>> env = ShapeEnv(); s = env.create_symbol(4)
        >>> env.statically_known(s >= 1), env.statically_known(s > 3)
        (True, None)
        """
        cond = sympy.sympify(cond)
        if isinstance(cond, BooleanAtom):
            return bool(cond)
        if cond not in self._static_cache:
            try:
                self._static_cache[cond] = self._prove(cond)
            except (ArithmeticError, ValueError, TypeError):  # sympy gave up: unknown
                self._static_cache[cond] = None
        return self._static_cache[cond]

    def _prove(self, cond: Boolean) -> bool | None:
        """Decide ``cond`` for all sizes, cheaply: relations between polynomials by the
        signs of their coefficients. floor/Mod/Max... are not simplified (sympy's
        ``simplify`` takes up to a second per fact and nearly always gives up): the
        caller guards on their value at the hints instead, which is always sound."""
        if cond.has(*_OPAQUE):
            return None
        key = (cond, tuple(sorted((str(s), self.var_to_lower.get(s)) for s in
                                  cond.free_symbols)))
        if key not in _PROOFS:
            if len(_PROOFS) >= _PROOFS_MAX:
                _PROOFS.clear()
            _PROOFS[key] = self._prove_polynomial(cond)
        return _PROOFS[key]

    def _prove_polynomial(self, cond: Boolean) -> bool | None:
        if isinstance(cond, (sympy.And, sympy.Or, sympy.Not)):
            return self._prove_logical(cond)
        if not isinstance(cond, sympy.core.relational.Relational):
            return None
        # lhs - rhs with s = lower + t (t >= 0); never rebuilt as a relation, whose
        # construction would ask sympy's (slow) assumption system about it
        diff = sympy.expand((cond.lhs - cond.rhs).xreplace(self._shift))
        dummies = frozenset(self._shift[s].free_symbols.pop() for s in cond.free_symbols
                            if s in self._shift)
        sign = _poly_sign(diff, dummies)
        if sign is None:
            return None
        proves, disproves = _SIGN_FACTS[cond.rel_op]
        return True if sign in proves else False if sign in disproves else None

    def _prove_logical(self, cond: Boolean) -> bool | None:
        """And/Or/Not from their parts (an unknown part leaves the whole unknown unless
        another part settles it)."""
        parts = [self.statically_known(a) for a in cond.args]
        if isinstance(cond, sympy.Not):
            return None if parts[0] is None else not parts[0]
        settles = isinstance(cond, sympy.Or)  # a True settles Or, a False settles And
        if settles in parts:
            return settles
        return (not settles) if None not in parts else None

    def evaluate_expr(self, expr: sympy.Basic | bool | int) -> bool | int | float:
        """Decide ``expr`` at the hints and record a guard on the decision.

        Booleans statically true/false for all sizes record nothing; integer
        (or rational) expressions record ``expr == value``.

        >>> env = ShapeEnv(); s = env.create_symbol(3)
        >>> env.evaluate_expr(sympy.Gt(s, 5)), env.format_guards()
        (False, ['s0 <= 5'])
        """
        if isinstance(expr, (bool, int, float)):
            return expr
        expr = sympy.sympify(expr)
        value = expr.xreplace(self._hint_subs)
        if isinstance(value, BooleanAtom):
            result = bool(value)
            if self.statically_known(expr) is None:
                self._record(expr, result, expr if result else sympy.Not(expr))
            return result
        if not value.is_number:
            raise ValueError(f"cannot evaluate {expr}: unknown symbols {value.free_symbols}")
        concrete = int(value) if value.is_Integer else float(value)
        if not expr.is_number:
            self._record(expr, concrete, sympy.Eq(expr, value))  # exact, even for floats
        return concrete

    def _record(self, expr: sympy.Basic, value: Any, condition: Boolean) -> None:
        if condition in self._guard_conditions:
            return  # the same fact twice adds nothing
        guard = Guard(expr, value, condition, _fmt(condition))
        self._guard_conditions.add(condition)
        self.guards.append(guard)
        log.debug("guard %s", guard.text)

    # -- guard checking --------------------------------------------------- #
    def _bind(self, values: Values) -> dict[sympy.Symbol, int]:
        if isinstance(values, Mapping):
            names = {str(s): s for s in self.var_to_val}
            return {names[k] if isinstance(k, str) else k: v for k, v in values.items()}
        if len(values) != len(self.var_to_val):
            raise ValueError(f"expected {len(self.var_to_val)} sizes, got {len(values)}")
        return dict(zip(self.var_to_val, values))

    def _failures(self, values: Values) -> Iterator[str]:
        bound = self._bind(values)
        for sym, val in bound.items():
            if val < self.var_to_lower[sym]:
                why = " (sizes 0/1 are specialised)" if self.var_to_lower[sym] == 2 else ""
                yield f"{sym} >= {self.var_to_lower[sym]} is false for {sym}={val}{why}"
        subs = {s: sympy.Integer(v) for s, v in bound.items()}
        for guard in self.guards:
            missing = guard.condition.free_symbols - subs.keys()
            if missing:
                raise ValueError(f"no value for {sorted(map(str, missing))} in {guard.text}")
            if not _holds(guard.condition, subs):
                yield f"{guard.text} is false for {self._describe(guard, bound)}"

    def _describe(self, guard: Guard, bound: dict[sympy.Symbol, int]) -> str:
        syms = sorted(guard.condition.free_symbols, key=str)
        return ", ".join(
            f"{s}={bound[s]}" + (f" ({self.sources[s]})" if self.sources[s] else "")
            for s in syms)

    def check_guards(self, values: Values) -> bool:
        """Do all guards (and the ``>= 2`` bounds of sizes) hold for ``values``?

        ``values`` maps symbols (or their names) to ints, or lists one int per
        symbol in creation order.

        >>> env = ShapeEnv(); s = env.create_symint(6)
        >>> _ = bool(s % 2 == 0)
        >>> env.check_guards([8]), env.check_guards({"s0": 7}), env.check_guards([1])
        (True, False, False)
        """
        return next(self._failures(values), None) is None

    def failing_guard(self, values: Values) -> str | None:
        """The first guard that ``values`` violate, as readable text, or ``None``."""
        return next(self._failures(values), None)

    def format_guards(self) -> list[str]:
        """Readable text of every recorded guard, in recording order.

        >>> env = ShapeEnv(); s = env.create_symint(3)
        >>> _ = bool(s < 9) and bool(s * s != 4)
        >>> env.format_guards()
        ['s0 < 9', 's0**2 != 4']
        """
        return [g.text for g in self.guards]


# --------------------------------------------------------------------------- #
# Dispatch modes
# --------------------------------------------------------------------------- #
class _ModeStack(threading.local):
    def __init__(self) -> None:
        self.stack: list[SymDispatchMode] = []


_MODES = _ModeStack()


class SymDispatchMode:
    """Base class for modes intercepting every symbolic operation.

    Subclasses override ``__sym_dispatch__``; ``func`` is the Python-level
    function (``operator.mul``, ``sym_max``, ``bool``, ``int``...) and ``args``
    the original operands.  The mode is popped while its handler runs.

    >>> class Log(SymDispatchMode):
    ...     def __sym_dispatch__(self, func, types, args, kwargs):
    ...         print(func.__name__, args)
    ...         return func(*args, **kwargs)
    >>> s = ShapeEnv().create_symint(4)
    >>> with Log():
    ...     r = 3 * s
    mul (3, s0)
    """

    def __sym_dispatch__(self, func: Callable[..., Any], types: tuple[type, ...],
                         args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return func(*args, **kwargs)

    def __enter__(self) -> SymDispatchMode:
        _MODES.stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        popped = _MODES.stack.pop()
        assert popped is self, "SymDispatchMode exited out of order"


def current_sym_dispatch_mode() -> SymDispatchMode | None:
    """The innermost active mode, or ``None``."""
    return _MODES.stack[-1] if _MODES.stack else None


@contextmanager
def _mode_popped() -> Iterator[SymDispatchMode]:
    mode = _MODES.stack.pop()
    try:
        yield mode
    finally:
        _MODES.stack.append(mode)


def _dispatch(func: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """Run ``func`` on ``args`` through the innermost mode, or compute it."""
    if not _MODES.stack:
        return _IMPLS[func](*args)
    types = tuple(dict.fromkeys(type(a) for a in args if is_symbolic(a)))
    with _mode_popped() as mode:  # so the handler's func(*args) computes
        return mode.__sym_dispatch__(func, types, args, {})


# --------------------------------------------------------------------------- #
# Symbolic scalars
# --------------------------------------------------------------------------- #
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

    >>> env = ShapeEnv(); s = env.create_symint(10)
    >>> (s + 2) * 3, s // 4, sym_max(s, 12), s * 0, s ** 2 - s * s
    (3*s0 + 6, floor(s0/4), Max(12, s0), 0, 0)
    """

    __slots__ = ()
    __int__ = _unary(int)
    __index__ = _unary(operator.index)


class SymFloat(_SymNumber):
    """A symbolic float, e.g. from ``s0 / 2``; ``float(f)`` guards its value.

    >>> s = ShapeEnv().create_symint(3)
    >>> s / 2, hint_int(s) / 2, float(s / 2)
    (s0/2, 1.5, 1.5)
    """

    __slots__ = ()


class SymBool(_SymBase):
    """A symbolic boolean; ``bool(b)`` decides via the hint and records a guard.

    >>> env = ShapeEnv(); s = env.create_symint(5)
    >>> b = (s > 3) & (s < 9)
    >>> b, bool(b), env.format_guards()
    ((s0 > 3) & (s0 < 9), True, ['(s0 > 3) & (s0 < 9)'])
    """

    __slots__ = ()
    __and__, __rand__ = _binary(operator.and_, _is_boolish)
    __or__, __ror__ = _binary(operator.or_, _is_boolish)
    __bool__ = _unary(bool)


# --------------------------------------------------------------------------- #
# Helpers (public)
# --------------------------------------------------------------------------- #
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


# --------------------------------------------------------------------------- #
# Implementations (what runs when no mode intercepts)
# --------------------------------------------------------------------------- #
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


# --------------------------------------------------------------------------- #
# Weak proxy maps
# --------------------------------------------------------------------------- #
K = TypeVar("K")
V = TypeVar("V")


class _WeakIdKeyDict(Generic[K, V]):
    """Weak keys compared by identity (``WeakKeyDictionary`` would call
    ``SymInt.__eq__``, which builds a SymBool and goes through dispatch)."""

    def __init__(self) -> None:
        self._data: dict[int, tuple[weakref.ref[K], V]] = {}

    def __setitem__(self, key: K, value: V) -> None:
        kid, data = id(key), self._data

        def drop(ref: weakref.ref[K]) -> None:
            if kid in data and data[kid][0] is ref:  # id may be reused later
                del data[kid]
        self._data[kid] = (weakref.ref(key, drop), value)

    def get(self, key: K, default: V | None = None) -> V | None:
        entry = self._data.get(id(key))
        return entry[1] if entry is not None and entry[0]() is key else default

    def __contains__(self, key: object) -> bool:
        entry = self._data.get(id(key))
        return entry is not None and entry[0]() is key

    def __len__(self) -> int:
        return len(self._data)


class SymProxyTracker:
    """One tracer's map from symbolic values to the proxies that compute them.

    Keys are held weakly (by identity), so a dropped ``SymInt`` frees its
    entry; owning the tracker from the tracer frees everything with it.

    >>> s = ShapeEnv().create_symint(4)
    >>> tracker = SymProxyTracker(); tracker.set(s, "size_0")
    >>> tracker.get(s), s in tracker, len(tracker)
    ('size_0', True, 1)
    """

    def __init__(self) -> None:
        self._map: _WeakIdKeyDict[_SymBase, Any] = _WeakIdKeyDict()

    def set(self, sym: _SymBase, proxy: Any) -> None:
        self._map[sym] = proxy

    def get(self, sym: _SymBase, default: Any = None) -> Any:
        return self._map.get(sym, default)

    def __contains__(self, sym: object) -> bool:
        return sym in self._map

    def __len__(self) -> int:
        return len(self._map)


# Keyed weakly by tracer.  A proxy that strongly references its tracer would
# keep the tracer alive from here: such tracers should own a SymProxyTracker.
_TRACKERS: weakref.WeakKeyDictionary[Any, SymProxyTracker] = weakref.WeakKeyDictionary()


def _tracker_of(tracer: Any, create: bool) -> SymProxyTracker | None:
    """A tracer that owns a ``sym_tracker`` keeps its map itself (its proxies reference
    the tracer, so a module-level entry would keep it alive); others use the weak map."""
    own = getattr(tracer, "sym_tracker", None)
    if own is not None:
        return own
    tracker = _TRACKERS.get(tracer)
    if tracker is None and create:
        tracker = _TRACKERS[tracer] = SymProxyTracker()
    return tracker


def set_proxy(tracer: Any, sym: _SymBase, proxy: Any) -> None:
    """Remember that, in ``tracer``, ``sym`` is computed by ``proxy``."""
    _tracker_of(tracer, True).set(sym, proxy)


def get_proxy(tracer: Any, sym: _SymBase, default: Any = None) -> Any:
    """The proxy ``tracer`` recorded for ``sym``, or ``default``."""
    tracker = _tracker_of(tracer, False)
    return default if tracker is None else tracker.get(sym, default)


def has_proxy(tracer: Any, sym: _SymBase) -> bool:
    """Whether ``tracer`` has a proxy for ``sym``."""
    tracker = _tracker_of(tracer, False)
    return tracker is not None and sym in tracker
