"""Deciding facts about sizes cheaply: the sign of ``lhs - rhs`` from its coefficients.

A relation between polynomials in sizes is proved true or false for every size by
the coefficient signs of ``lhs - rhs`` with each size written ``lower + t``
(``t >= 0``); floor, Mod, Max... are never simplified, so such a branch is guarded
instead (always sound). Proofs are shared by every ShapeEnv.
"""
from __future__ import annotations

import sympy
from sympy.logic.boolalg import Boolean


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
