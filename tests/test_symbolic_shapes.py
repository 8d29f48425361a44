"""Tests for autograd_compile.tracing.symbolic_shapes (SymInt, ShapeEnv, guards, modes)."""
from __future__ import annotations

import doctest
import gc
import operator
import weakref
from collections.abc import Callable
from typing import Any

import pytest
import sympy
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from autograd_compile import symbolic_shapes as ss
from autograd_compile.tracing import prover, shape_env, sym_mode, sym_types
from autograd_compile.tracing.symbolic_shapes import (
    ShapeEnv, SymBool, SymDispatchMode, SymFloat, SymInt, SymProxyTracker,
    current_sym_dispatch_mode, get_proxy, guard_int, has_proxy, hint_int,
    is_symbolic, set_proxy, sym_int, sym_max, sym_min, sym_not,
)


def two_sizes(a: int = 6, b: int = 4) -> tuple[ShapeEnv, SymInt, SymInt]:
    env = ShapeEnv()
    return env, env.create_symint(a, "sizes[0]"), env.create_symint(b, "sizes[1]")


# --------------------------------------------------------------------------- #
# Random expression trees, evaluated on SymInts and on plain ints
# --------------------------------------------------------------------------- #
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul,
    "//": operator.floordiv, "%": operator.mod,
}
LEAVES = st.sampled_from(["a", "b"]) | st.integers(-6, 6)
TREES = st.recursive(
    LEAVES,
    lambda kids: st.tuples(st.sampled_from([*OPS, "max", "min"]), kids, kids),
    max_leaves=7,
)
HINTS = st.integers(2, 60)


def evaluate(tree: Any, a: Any, b: Any, mx: Callable, mn: Callable) -> Any:
    """Evaluate ``tree`` with leaves a/b; ``mx``/``mn`` implement max/min."""
    if tree == "a":
        return a
    if tree == "b":
        return b
    if isinstance(tree, int):
        return tree
    op, left, right = tree
    x, y = evaluate(left, a, b, mx, mn), evaluate(right, a, b, mx, mn)
    return {"max": mx, "min": mn}.get(op, OPS.get(op))(x, y)


def plain(tree: Any, a: int, b: int) -> int | None:
    """The tree on Python ints (builtins max/min); None on division by zero."""
    try:
        return evaluate(tree, a, b, max, min)
    except ZeroDivisionError:
        return None


@settings(max_examples=200, deadline=None)
@given(tree=TREES, a=HINTS, b=HINTS)
def test_arithmetic_hint_matches_python_ints(tree: Any, a: int, b: int) -> None:
    env, sa, sb = two_sizes(a, b)
    expected = plain(tree, a, b)
    if expected is None:
        with pytest.raises(ZeroDivisionError):
            evaluate(tree, sa, sb, sym_max, sym_min)
        return
    result = evaluate(tree, sa, sb, sym_max, sym_min)
    assert hint_int(result) == expected
    assert env.size_hint(result) == expected  # the sympy expression agrees too
    if not is_symbolic(result):
        assert type(result) is int and result == expected
    assert env.guards == []  # arithmetic alone never guards


@settings(max_examples=150, deadline=None)
@given(tree=TREES, a=HINTS, b=HINTS, c=HINTS, d=HINTS)
def test_expression_is_valid_at_other_sizes(tree: Any, a: int, b: int, c: int, d: int) -> None:
    expected_ab, expected_cd = plain(tree, a, b), plain(tree, c, d)
    assume(expected_ab is not None and expected_cd is not None)
    env, sa, sb = two_sizes(a, b)
    result = evaluate(tree, sa, sb, sym_max, sym_min)
    expr = sympy.sympify(result.node.expr if is_symbolic(result) else result)
    s0, s1 = env.symbols
    assert expr.xreplace({s0: c, s1: d}) == expected_cd


@settings(max_examples=150, deadline=None)
@given(tree=TREES, k=st.integers(-20, 80), a=HINTS, b=HINTS, c=HINTS, d=HINTS)
def test_comparison_guard_reuse_iff_same_branch(
        tree: Any, k: int, a: int, b: int, c: int, d: int) -> None:
    expected_ab, expected_cd = plain(tree, a, b), plain(tree, c, d)
    assume(expected_ab is not None and expected_cd is not None)
    env, sa, sb = two_sizes(a, b)
    taken = bool(evaluate(tree, sa, sb, sym_max, sym_min) > k)
    assert taken == (expected_ab > k)
    assert env.check_guards([a, b])
    assert env.check_guards([c, d]) == ((expected_cd > k) == taken)


# --------------------------------------------------------------------------- #
# ShapeEnv: symbols, hints, sources, specialisation
# --------------------------------------------------------------------------- #
def test_module_docstring_examples_run() -> None:
    results = [doctest.testmod(m, optionflags=doctest.ELLIPSIS)
               for m in (ss, shape_env, sym_types, sym_mode, prover)]  # the split modules
    assert sum(r.attempted for r in results) > 20 and sum(r.failed for r in results) == 0


def test_symbols_are_named_in_order_with_hints_and_sources() -> None:
    env = ShapeEnv()
    x, y = env.create_symint(17, "sizes[3]"), env.create_symint(5)
    assert [str(s) for s in env.symbols] == ["s0", "s1"]
    s0, s1 = env.symbols
    assert x.node.expr == s0 and x.node.shape_env is env and x.node.hint == 17
    assert env.var_to_val == {s0: 17, s1: 5}
    assert env.sources == {s0: "sizes[3]", s1: ""}
    assert s0.is_integer and s0.is_positive


def test_sizes_zero_and_one_are_specialised_to_ints() -> None:
    env = ShapeEnv()
    assert env.create_symint(0) == 0 and type(env.create_symint(0)) is int
    assert env.create_symint(1) == 1 and type(env.create_symint(1)) is int
    assert env.symbols == []
    assert isinstance(env.create_symint(2), SymInt)


def test_specialised_symbols_reject_zero_and_one_sizes() -> None:
    env = ShapeEnv()
    env.create_symint(5, "sizes[0]")
    assert env.check_guards([2]) and env.check_guards([1000])
    assert not env.check_guards([1]) and not env.check_guards([0])
    assert "0/1 are specialised" in env.failing_guard([1])
    raw = env.create_symbol(1)  # raw symbols may be 1
    assert env.var_to_lower[raw] == 1 and env.check_guards([5, 1])


def test_same_source_reuses_symbol_and_bad_hints_raise() -> None:
    env = ShapeEnv()
    assert env.create_symbol(4, "x") is env.create_symbol(4, "x")
    assert len(env.symbols) == 1
    with pytest.raises(ValueError):
        env.create_symbol(5, "x")
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError):
            env.create_symint(bad)
    with pytest.raises(ValueError):
        env.create_symbol(0)


# --------------------------------------------------------------------------- #
# Arithmetic and constant folding
# --------------------------------------------------------------------------- #
def test_arithmetic_with_ints_on_either_side() -> None:
    env, a, b = two_sizes(7, 3)
    s0, s1 = env.symbols
    cases = {
        a + 2: (s0 + 2, 9), 2 + a: (s0 + 2, 9), 10 - a: (10 - s0, 3),
        a * b: (s0 * s1, 21), 3 * a: (3 * s0, 21), a // b: (sympy.floor(s0 / s1), 2),
        20 // a: (sympy.floor(20 / s0), 2), a % b: (sympy.Mod(s0, s1), 1),
        20 % a: (sympy.Mod(20, s0), 6), -a: (-s0, -7), abs(b - a): (sympy.Abs(s1 - s0), 4),
        a ** 2: (s0 ** 2, 49), 2 ** b: (2 ** s1, 8), +a: (s0, 7),
        sym_max(a, b): (sympy.Max(s0, s1), 7), sym_min(a, 5): (sympy.Min(s0, 5), 5),
    }
    for value, (expr, hint) in cases.items():
        assert isinstance(value, SymInt)
        assert value.node.expr == expr and hint_int(value) == hint
    assert env.guards == []


def test_constants_fold_to_python_ints() -> None:
    env, a, b = two_sizes()
    for value, expected in [(a - a, 0), (a * 0, 0), (0 * a, 0), ((a + 3) - a, 3),
                            (a // a, 1), (a % 1, 0), ((2 * a) % 2, 0), (a ** 0, 1),
                            (sum([a, b, -b]) - a, 0)]:
        assert type(value) is int and value == expected
    assert sym_max(3, 4) == 4 and sym_min(3, 4) == 3  # plain ints stay plain


def test_comparisons_build_symbools_or_fold_to_bools() -> None:
    env, a, b = two_sizes()
    assert isinstance(a > b, SymBool) and isinstance(a == 6, SymBool)
    assert (a == a) is True and (a * 2 == 2 * a) is True and (a >= 1) is True
    assert (a == 0) is False and (a < 0) is False
    assert (a == None) is False and (a != "x") is True  # noqa: E711 - non-numbers


def test_repr_shows_the_expression() -> None:
    _, a, b = two_sizes()
    assert repr(a * 2) == "2*s0" and str(a + b) == "s0 + s1"
    assert repr(a // 4) == "floor(s0/4)" and repr(a > 3) == "s0 > 3"
    assert repr(a == b) == "s0 == s1" and repr(a * a != 4) == "s0**2 != 4"


def test_division_by_a_zero_hint_raises() -> None:
    _, a, b = two_sizes(6, 6)
    with pytest.raises(ZeroDivisionError):
        a // (a - b)
    with pytest.raises(ZeroDivisionError):
        a % (b - 6)
    with pytest.raises(ValueError):
        a ** (b - 7)


def test_mixing_shape_envs_raises() -> None:
    _, a, _ = two_sizes()
    _, c, _ = two_sizes()
    with pytest.raises(ValueError, match="different ShapeEnvs"):
        a + c


def test_symfloat_true_division() -> None:
    env, a, b = two_sizes(6, 4)
    q = a / b
    assert isinstance(q, SymFloat) and q.node.hint == 1.5
    assert isinstance(q * b, SymFloat) and (q * b).node.expr == env.symbols[0]
    assert (a * 0.5).node.hint == 3.0 and isinstance(a + 0.5, SymFloat)
    assert (a / a) == 1.0 and type(a / a) is float
    assert float(q) == 1.5 and env.format_guards() == ["s0/s1 == 3/2"]
    assert env.check_guards([9, 6]) and not env.check_guards([6, 6])


def test_sym_int_truncates_without_specialising() -> None:
    env, a, _ = two_sizes(7)
    assert sym_int(a / 2).node.expr == sympy.floor(env.symbols[0] / 2)
    assert hint_int(sym_int(a / 2)) == 3 and env.guards == []
    assert hint_int(sym_int((a - 20) / 2)) == int((7 - 20) / 2)  # -6, toward zero
    assert sym_int(a) is a and sym_int(-2.5) == -2


def test_symbool_logic() -> None:
    env, a, b = two_sizes(6, 4)
    both = (a > 3) & (b < 5)
    assert isinstance(both, SymBool) and both.node.hint is True
    assert ((a > 3) | True) is True and ((a > 3) & False) is False
    assert isinstance(sym_not(a > 3), SymBool) and sym_not(True) is False
    assert not bool(sym_not(a > 3))
    assert env.format_guards() == ["s0 > 3"]


# --------------------------------------------------------------------------- #
# Guards
# --------------------------------------------------------------------------- #
def test_branch_records_guard_and_checks_new_sizes() -> None:
    env, a, _ = two_sizes(6)
    branch = "big" if a * 2 > 10 else "small"
    assert branch == "big"
    assert env.format_guards() == ["2*s0 > 10"]
    guard = env.guards[0]
    assert guard.value is True and guard.expr == sympy.Gt(2 * env.symbols[0], 10)
    assert env.check_guards([7, 4]) and env.check_guards([100, 2])
    assert not env.check_guards([5, 4]) and not env.check_guards([3, 4])
    assert env.failing_guard([7, 4]) is None
    assert env.failing_guard([5, 4]) == "2*s0 > 10 is false for s0=5 (sizes[0])"


def test_false_branch_records_negated_guard() -> None:
    env, a, _ = two_sizes(4)
    assert not (a * 2 > 10)
    assert env.format_guards() == ["2*s0 <= 10"] and env.guards[0].value is False
    assert env.check_guards([5, 4]) and not env.check_guards([6, 4])


def test_statically_true_facts_record_no_guard() -> None:
    env, a, b = two_sizes()
    assert bool(a >= 2) and bool(a != 1) and bool(a + b > a) and bool(a * b >= b)
    assert not bool(a < 2) and bool(a)  # bool(s0) means s0 != 0: always true
    assert env.guards == []


def test_int_and_index_specialise_with_equality_guard() -> None:
    env, a, b = two_sizes(17, 4)
    assert int(a) == 17 and type(int(a)) is int
    assert env.format_guards() == ["s0 == 17"] and env.guards[0].value == 17
    assert env.check_guards([17, 9]) and not env.check_guards([18, 4])
    assert operator.index(b) == 4 and len(range(b)) == 4 and guard_int(a + b) == 21
    assert env.format_guards() == ["s0 == 17", "s1 == 4", "s0 + s1 == 21"]
    assert float(b) == 4.0 and guard_int(5) == 5


def test_bool_of_symint_guards_nonzero() -> None:
    env, a, _ = two_sizes(6)
    assert bool(a - 5) is True
    assert env.guards[0].condition == sympy.Ne(env.symbols[0] - 5, 0)
    assert not env.check_guards([5, 4]) and env.check_guards([9, 4])


def test_guards_are_deduplicated() -> None:
    env, a, _ = two_sizes(6)
    for _ in range(3):
        assert a > 3 and int(a) == 6
    assert env.format_guards() == ["s0 > 3", "s0 == 6"]


def test_check_guards_accepts_symbol_and_name_mappings() -> None:
    env, a, b = two_sizes(6, 4)
    assert a > b
    s0, s1 = env.symbols
    assert env.check_guards({s0: 9, s1: 2}) and env.check_guards({"s0": 9, "s1": 2})
    assert not env.check_guards({"s0": 2, "s1": 9})
    with pytest.raises(ValueError):
        env.check_guards([9])
    with pytest.raises(ValueError, match="no value"):
        env.check_guards({"s0": 9})


def test_evaluate_expr_size_hint_and_simplify() -> None:
    env = ShapeEnv()
    s = env.create_symbol(8, "n")
    assert env.evaluate_expr(sympy.Ge(s, 1)) is True and env.guards == []
    assert env.evaluate_expr(s * 2) == 16 and env.format_guards() == ["2*s0 == 16"]
    assert env.evaluate_expr(True) is True and env.evaluate_expr(3) == 3
    assert env.size_hint(s ** 2 // 3) == 21 and env.size_hint(4) == 4
    assert env.simplify(sympy.floor(2 * s / 2) + s - s) == s
    with pytest.raises(ValueError):
        env.evaluate_expr(sympy.Symbol("other") > 3)


POLY_TREES = st.recursive(st.sampled_from(["a", "b"]) | st.integers(-6, 6),
                          lambda kids: st.tuples(st.sampled_from("+-*"), kids, kids),
                          max_leaves=6)
GRID = [(x, y) for x in range(2, 9) for y in range(2, 9)]


@settings(max_examples=200, deadline=None)
@given(tree=POLY_TREES, k=st.integers(-20, 40), rel=st.sampled_from(["<", "<=", "==", "!="]))
def test_statically_known_agrees_with_brute_force(tree: Any, k: int, rel: str) -> None:
    """A fact proved (or refuted) for all sizes holds (or fails) at every size >= 2."""
    env, a, b = two_sizes()
    lhs = evaluate(tree, a, b, sym_max, sym_min)
    assume(is_symbolic(lhs))
    cond = {"<": sympy.Lt, "<=": sympy.Le, "==": sympy.Eq, "!=": sympy.Ne}[rel](
        lhs.node.expr, k)
    known = env.statically_known(cond)
    truth = {cond.xreplace({env.symbols[0]: x, env.symbols[1]: y}) == sympy.true
             for x, y in GRID}
    if known is not None:
        assert truth == {known}


def test_polynomial_facts_proved_by_coefficient_signs() -> None:
    env, a, b = two_sizes()
    assert bool(a * a - 4 * a + 4 >= 0) and bool(a * b - a - b >= 0)  # t0**2 >= 0; t0*t1 + ...
    assert not bool(a * b + 1 < 2 * a) and env.guards == []
    assert bool(a * b > a + b)  # false at a = b = 2: guarded, not proved
    assert env.format_guards() == ["s0*s1 > s0 + s1"]
    assert env.statically_known((a > 1).node.expr & (b > 1).node.expr) is True
    assert env.statically_known((a > 1).node.expr & (b > 5).node.expr) is None
    assert env.statically_known((a > 5).node.expr | (b >= 2).node.expr) is True


def test_floor_and_mod_facts_are_guarded_not_simplified() -> None:
    env, a, b = two_sizes(12, 4)
    rem = (3 * a * b) % (2 * b)
    assert env.statically_known(sympy.Ne(rem.node.expr, 0)) is None
    assert not bool(rem != 0)
    assert len(env.guards) == 1  # s1*Mod(3*s0, 2) == 0: sympy normalises the Mod
    assert env.check_guards([8, 5]) and not env.check_guards([7, 5])  # 3*7*5 % 10 = 5


def test_proofs_shared_across_envs_respect_lower_bounds() -> None:
    """Symbols of equal name in two envs may have different lower bounds."""
    sized, plain_env = ShapeEnv(), ShapeEnv()
    s_sized, s_plain = sized.create_symint(5), plain_env.create_symbol(5)  # both "s0"
    assert sized.statically_known(s_sized.node.expr >= 2) is True
    assert plain_env.statically_known(s_plain >= 2) is None
    assert ShapeEnv().create_symint(3) is not None and sized.statically_known(
        s_sized.node.expr >= 2) is True


# --------------------------------------------------------------------------- #
# Helpers, hashing
# --------------------------------------------------------------------------- #
def test_helpers() -> None:
    env, a, _ = two_sizes(6)
    assert is_symbolic(a) and is_symbolic(a > 3) and is_symbolic(a / 4)
    assert not is_symbolic(3) and not is_symbolic(True)
    assert hint_int(a * 3) == 18 and hint_int(5) == 5 and env.guards == []


def test_hash_is_identity_so_symints_key_dicts() -> None:
    _, a, _ = two_sizes()
    twin = SymInt(a.node)
    assert hash(a) != hash(twin) and {a: 1, twin: 2}[a] == 1
    cache: weakref.WeakKeyDictionary[SymInt, int] = weakref.WeakKeyDictionary()
    cache[a] = 7
    assert cache[a] == 7 and weakref.ref(a)() is a


# --------------------------------------------------------------------------- #
# SymDispatchMode
# --------------------------------------------------------------------------- #
class LogMode(SymDispatchMode):
    def __init__(self) -> None:
        self.calls: list[tuple[Any, tuple[Any, ...]]] = []
        self.inside: list[SymDispatchMode | None] = []

    def __sym_dispatch__(self, func, types, args, kwargs):
        self.calls.append((func, args))
        self.inside.append(current_sym_dispatch_mode())
        return func(*args, **kwargs)


def test_mode_sees_every_operation_with_original_operands() -> None:
    env, a, b = two_sizes(6, 4)
    with LogMode() as mode:
        y = a * 2 + 3
        z = 10 - sym_max(a, b)
        taken = bool(a > 3)
        size = int(b)
    assert (hint_int(y), hint_int(z), taken, size) == (15, 4, True, 4)
    funcs = [f for f, _ in mode.calls]
    assert funcs == [operator.mul, operator.add, sym_max, operator.sub,
                     operator.gt, bool, int]
    assert mode.calls[0][1] == (a, 2) and mode.calls[3][1][0] == 10  # reflected order
    assert env.format_guards() == ["s0 > 3", "s1 == 4"]


def test_mode_is_popped_inside_handler_and_restored_after() -> None:
    _, a, _ = two_sizes()
    assert current_sym_dispatch_mode() is None
    with LogMode() as mode:
        assert current_sym_dispatch_mode() is mode
        a + 1
        assert current_sym_dispatch_mode() is mode
    assert mode.inside == [None] and current_sym_dispatch_mode() is None


def test_nested_modes_inner_handler_reaches_outer() -> None:
    _, a, _ = two_sizes()
    with LogMode() as outer, LogMode() as inner:
        (a * 3).node.expr
    assert [f for f, _ in inner.calls] == [operator.mul]
    assert [f for f, _ in outer.calls] == [operator.mul]  # the inner's func(*args)
    assert inner.inside == [outer] and outer.inside == [None]


def test_mode_controls_the_result() -> None:
    class Const(SymDispatchMode):
        def __sym_dispatch__(self, func, types, args, kwargs):
            assert types == (SymInt,)
            return 42

    _, a, _ = two_sizes()
    with Const():
        assert a * 2 == 42 and a // 3 == 42
    assert hint_int(a * 2) == 12  # direct again after exit


def test_handler_exception_restores_mode_stack() -> None:
    class Boom(SymDispatchMode):
        def __sym_dispatch__(self, func, types, args, kwargs):
            raise RuntimeError("boom")

    _, a, _ = two_sizes()
    with pytest.raises(RuntimeError), Boom() as mode:
        try:
            a + 1
        finally:
            assert current_sym_dispatch_mode() is mode
    assert current_sym_dispatch_mode() is None


def test_base_mode_passes_through() -> None:
    env, a, _ = two_sizes(6)
    with SymDispatchMode():
        assert hint_int(a * 2) == 12 and bool(a >= 2) and env.guards == []


# --------------------------------------------------------------------------- #
# Weak proxy maps
# --------------------------------------------------------------------------- #
class Tracer:
    """Stands in for an FX-style tracer."""


class Proxy:
    def __init__(self, name: str, tracer: Tracer | None = None) -> None:
        self.name, self.tracer = name, tracer


def test_set_and_get_proxy_per_tracer() -> None:
    _, a, b = two_sizes()
    t1, t2 = Tracer(), Tracer()
    p = Proxy("sym_size")
    set_proxy(t1, a, p)
    assert get_proxy(t1, a) is p and has_proxy(t1, a)
    assert get_proxy(t2, a) is None and get_proxy(t1, b, "none") == "none"
    assert not has_proxy(t2, a) and not has_proxy(t1, b)


def test_dropping_tracer_frees_its_entries() -> None:
    _, a, _ = two_sizes()
    tracer, proxy = Tracer(), Proxy("p")
    set_proxy(tracer, a, proxy)
    tracer_ref, proxy_ref = weakref.ref(tracer), weakref.ref(proxy)
    del tracer, proxy
    gc.collect()
    assert tracer_ref() is None and proxy_ref() is None
    assert a.node.hint == 6  # the SymInt itself is unaffected


def test_dropping_symint_frees_its_entry() -> None:
    env, a, _ = two_sizes()
    tracer, tracker = Tracer(), SymProxyTracker()
    tmp = a * 5
    set_proxy(tracer, tmp, Proxy("mul"))
    tracker.set(tmp, Proxy("mul"))
    sym_ref = weakref.ref(tmp)
    proxy_ref = weakref.ref(get_proxy(tracer, tmp))
    assert len(tracker) == 1
    del tmp
    gc.collect()
    assert sym_ref() is None and proxy_ref() is None and len(tracker) == 0
    assert sym_mode._TRACKERS[tracer].get(a) is None and len(sym_mode._TRACKERS[tracer]) == 0


def test_tracker_owned_by_tracer_frees_cycles() -> None:
    _, a, _ = two_sizes()
    tracer = Tracer()
    tracer.sym_proxies = SymProxyTracker()
    tracer.sym_proxies.set(a, Proxy("size", tracer))  # proxy -> tracer cycle
    tracer_ref = weakref.ref(tracer)
    del tracer
    gc.collect()
    assert tracer_ref() is None


def test_proxy_lookup_never_calls_symint_eq() -> None:
    _, a, _ = two_sizes()
    twin = SymInt(a.node)  # same expression, different object
    tracer = Tracer()
    set_proxy(tracer, a, "pa")
    with LogMode() as mode:
        assert get_proxy(tracer, a) == "pa" and get_proxy(tracer, twin) is None
        set_proxy(tracer, twin, "pt")
        assert get_proxy(tracer, twin) == "pt" and get_proxy(tracer, a) == "pa"
    assert mode.calls == []  # no SymBool was built behind the tracer's back


def test_guard_undefined_at_new_sizes_fails_instead_of_raising() -> None:
    env, a, b = two_sizes(5, 3)
    assert a // (a - b) > 1 and not (sym_max(0, a // (a - b)) > 5)
    assert env.check_guards([7, 5])
    assert not env.check_guards([4, 4])  # divisor s0 - s1 is 0 there
    assert env.failing_guard([4, 4]).startswith("floor(s0/(s0 - s1)) > 1")
