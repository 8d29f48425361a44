"""Symbols and guards: :class:`ShapeEnv` owns the size symbols of one trace and records
every decision the trace takes on them as a :class:`Guard`."""
from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sympy
from sympy.logic.boolalg import Boolean, BooleanAtom

from .prover import _OPAQUE, _PROOFS, _PROOFS_MAX, _SIGN_FACTS, _fmt, _holds, _poly_sign
from .sym_types import SymInt, SymNode

log = logging.getLogger("autograd_compile.dynamic")

Values = Mapping[sympy.Symbol | str, int] | Sequence[int]


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
