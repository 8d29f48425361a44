"""Differential fuzzing: eager == compiled-eager == compiled-jax == jax.grad.

Hypothesis draws small programs (``tests/_fuzz_programs.py``: 53 ops, custom
Functions, in-place ops on non-leaves, hooks of every kind) as data. Each is
run by our engine in the three execution modes and written again in
jax.numpy and differentiated by ``jax.grad``, which shares none of our code.
Float64 throughout; the tolerance is rtol 1e-9 plus an absolute term of 1e-9
times the largest expected magnitude (summation order differs between XLA and
eager, and a few cancelling sums of <= 40 terms lose digits relative to their
largest term, never to the tiny result).

Default run (CI): 200 derandomised examples, about 3 minutes (each example compiles
about a dozen small XLA programs: jax's per-primitive ones for the oracle, our jitted
kernels, the compiled backward); the ``slow`` test (``make test-slow``, ``ACG_SLOW=1``)
runs 10 000 random ones and shrinks failures.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, assume, given, note, settings
from hypothesis import strategies as st

import autograd_compile as acg
from autograd_compile import compiled_autograd as ca

import _fuzz_programs as fp
from _fuzz_programs import Hook, Op, Program

MODES = {
    "eager": contextlib.nullcontext,
    "compiled-eager": lambda: ca.enable("eager"),
    "compiled-jax": lambda: ca.enable("jax"),
}
COMMON = dict(deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                     HealthCheck.data_too_large])
# the default run: the same examples every time; shrinking re-runs three modes and jax per
# step, so it reports the failing program as drawn (its source is in the notes)
FUZZ = settings(max_examples=200, derandomize=True, phases=[Phase.explicit, Phase.generate],
                report_multiple_bugs=False, **COMMON)
FUZZ_SLOW = settings(max_examples=10_000, **COMMON)
RTOL = 1e-9


def close(actual, expected, what: str) -> None:
    assert actual is not None, f"{what}: got None, expected {expected}"
    expected = np.asarray(expected)
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * scale, err_msg=what)


def tame(expected: fp.Expected) -> bool:
    """Values and gradients of moderate size (exp of exp of ... overflows)."""
    return all(np.all(np.abs(v) < 1e6) for v in expected.values) and \
        all(np.all(np.abs(g) < 1e8) for g in expected.grads)


def check(result: fp.Result, expected: fp.Expected, program: Program, mode: str) -> None:
    """Leaf grads, retained grads and every recorded hook argument against the oracle."""
    for i, (got, want) in enumerate(zip(result.grads, expected.grads)):
        close(got, want, f"{mode}: leaf v{i}.grad")
    for i, want in expected.retained.items():
        close(result.retained[i], want, f"{mode}: retained v{i}.grad")
    calls: dict[int, int] = {}
    for k, arrays, _ in result.log:
        calls[k] = calls.get(k, 0) + 1
        want = expected_record(program, expected, k, calls[k])
        if want is not None:
            close(arrays[0], want, f"{mode}: argument of hook {k} {program.hooks[k]}")


def expected_record(program: Program, expected: fp.Expected, k: int, call: int):
    """What a recording tensor hook or post-accumulate hook sees on its ``call``-th call."""
    h = program.hooks[k]
    if h.kind == "post_acc":
        init = expected.initial[h.target]
        return (0 if init is None else init) + call * expected.step[h.target]
    if h.kind != "tensor":
        return None  # node hooks: compared across modes only
    scale = np.prod([e.scale for e in program.hooks[:k] if e.kind == "tensor"
                     and e.target == h.target and e.scale is not None])
    return expected.seen[h.target] * scale


def same_logs(a: fp.Result, b: fp.Result, what: str) -> None:
    """Same hooks called, same number of times, in the same order, with the same values,
    each seeing the same ``.grad`` of every leaf."""
    assert [k for k, _, _ in a.log] == [k for k, _, _ in b.log], what
    for (k, xs, xg), (_, ys, yg) in zip(a.log, b.log):
        assert len(xs) == len(ys), f"{what}: hook {k}"
        for x, y in zip(xs, ys):
            close(x, y, f"{what}: hook {k}")
        for leaf, (x, y) in enumerate(zip(xg, yg)):
            assert (x is None) == (y is None), f"{what}: hook {k} saw v{leaf}.grad {x} vs {y}"
            if x is not None:
                close(x, y, f"{what}: hook {k} saw v{leaf}.grad")


def run_all_modes(program: Program, seed: int, fuzzing: bool = False) -> dict[str, fp.Result]:
    """Run ``program`` in every mode against the oracle (``fuzzing``: reject wild ones)."""
    if fuzzing:
        note(program.source())
    expected = fp.oracle(program, seed)
    if fuzzing:
        assume(tame(expected))
    else:
        assert tame(expected)
    expected_again = fp.oracle(program, seed + 1)
    results = {}
    for name, mode in MODES.items():
        ca.reset()  # each compiled mode captures its own graph
        results[name] = fp.run_acg(program, seed, mode)
        check(results[name], expected, program, name)
        if name != "eager":
            same_logs(results[name], results["eager"], f"{name} vs eager")
            captures = ca.counters["captures"]
            again = fp.run_acg(program, seed + 1, mode)  # same structure, new data
            check(again, expected_again, program, f"{name}, second data")
            assert ca.counters["captures"] == captures, f"{name}: new data recaptured"
    for i, (got, want) in enumerate(zip(results["eager"].values, expected.values)):
        close(got, want, f"forward value v{i}")
    return results


@FUZZ
@given(program=fp.programs(), seed=st.integers(0, 2 ** 16))
def test_random_programs_match_jax_grad_in_every_mode(program, seed):
    run_all_modes(program, seed, fuzzing=True)


@pytest.mark.slow
@FUZZ_SLOW
@given(program=fp.programs(), seed=st.integers(0, 2 ** 16))
def test_random_programs_match_jax_grad_in_every_mode_slow(program, seed):
    run_all_modes(program, seed, fuzzing=True)


def test_menu_has_the_required_breadth():
    assert len(fp.OPS) >= 20
    for name in ["add", "mul_s", "sum", "mean", "reshape", "transpose", "permute", "matmul",
                 "index", "inplace", "cube_fn", "muladd_fn", "linear"]:
        assert name in fp.OPS


# -- regressions: shrunk or hand-reduced failures, pinned as plain programs ------------------

def program(leaves, ops, hooks=(), loss=None, has_grad=None, n_backward=1) -> Program:
    n = len(leaves) + len(ops)
    used = {a for op in ops for a in op[1]}
    loss = loss or tuple((i, 1.0) for i in range(n) if i not in used)
    return Program(tuple(leaves), tuple(Op(*op) for op in ops), tuple(Hook(*h) for h in hooks),
                   loss, tuple(has_grad or [False] * len(leaves)), n_backward)


def test_regression_every_hook_kind_on_one_node():
    p = program([(4, 5), (5,)],
                [("mul", (0, 1), ()), ("sum", (2,), (1, False)), ("tanh", (3,), ())],
                hooks=[("tensor", 2, 2.0, False), ("pre", 2, -1.0, True), ("post", 2, 0.5, False),
                       ("retain", 2, None, False), ("tensor", 2, None, False),
                       ("post_acc", 1, None, False), ("tensor", 0, 3.0, True)],
                has_grad=[True, False], n_backward=2)
    run_all_modes(p, seed=0)


def test_regression_inplace_and_custom_functions_share_a_leaf():
    p = program([(2, 3)],
                [("inplace", (0, 0), ("mul_", None)), ("cube_fn", (1,), (0.5,)),
                 ("muladd_fn", (2, 0), (-2.0,)), ("index", (3,), ("list", (1, 1, 0)))],
                hooks=[("post", 2, 2.0, True), ("tensor", 1, -1.0, False)])
    run_all_modes(p, seed=3)


def test_regression_pure_post_hook_then_pure_pre_hook_same_structure():
    """Regression: the cache key counted hooks but not their kind (pre vs post)."""
    ca.reset()
    shared = [(3,)], [("mul_s", (0,), (2.0, False)), ("sin", (1,), ())]
    for kind in ("pre", "post", "pre"):
        p = program(*shared, hooks=[(kind, 1, 3.0, False), (kind, 2, None, False)])
        expected = fp.oracle(p, 0)
        for name in ("compiled-eager", "compiled-jax"):
            check(fp.run_acg(p, 0, MODES[name]), expected, p, f"{name} {kind}")


SIZE_ARG_OPS = [("expand", (0,), ((2, 3),)), ("reshape", (0,), ((3, 1),)),
                ("index", (0,), ("slice", (0, 1, 3, 1))), ("index", (0,), ("int", 1)),
                ("index", (0,), ("int", -1)), ("index", (0,), ("ellipsis", -2)),
                ("index", (0,), ("slice", (0, -2, 3, 1))), ("index", (0,), ("slice", (0, 0, -1, 1))),
                ("select", (0,), ("select", 0, -1)), ("select", (0,), ("narrow", 0, -2, 1))]


@pytest.mark.parametrize("op", SIZE_ARG_OPS, ids=lambda op: op[0] + str(op[2]))
def test_regression_ops_with_size_arguments_under_compile(op):
    """Regressions: Collector.sizes shadowed its visitor, so expand/reshape/slicing failed
    to capture; negative indices (x[-1], x[..., -2], x[-2:], select(0, -1)) failed with
    "ValueError: a size must be a non-negative int, got -1" (an index lifted as a size)."""
    run_all_modes(program([(3,)], [op]), seed=0)


def test_inplace_on_a_slice_writes_through_to_its_base():
    """Regression: in-place ops on a view (u[1:].mul_) left the base unchanged."""
    x = acg.tensor([1.0, 2.0, 3.0], dtype=acg.float64, requires_grad=True)
    u = x.clone()
    u[1:].mul_(10.0)
    assert u.tolist() == [1.0, 20.0, 30.0]  # PyTorch: a slice is a view of u
    u.sum().backward()
    assert x.grad.tolist() == [1.0, 10.0, 10.0]


def test_regression_pure_post_accumulate_grad_hook():
    """Regression: a post-accumulate-grad hook marked pure_hook crashed the capture
    ("list indices must be integers or slices, not function"): the capture indexed the
    hooks input with the function itself."""
    for name, mode in MODES.items():
        ca.reset()
        x = acg.tensor([1.0, 2.0], dtype=acg.float64, requires_grad=True)
        seen = []
        x.register_post_accumulate_grad_hook(ca.pure_hook(lambda p: seen.append(p.grad.tolist())))
        with mode():
            (x * 3.0).sum().backward()
        assert x.grad.tolist() == [3.0, 3.0], name
        assert seen == [[3.0, 3.0]], name


def test_regression_tensor_from_outside_the_graph_in_a_pure_hook_or_function():
    """Regression: a tensor a pure hook closes over, or a Function's backward reads from
    a global, became a ``get_attr`` of a constant the GraphModule never stored
    ("get_attr target '_tensor_constant0': root dict has no key ..."). Eager semantics:
    the tensor's current value is used."""
    weights = {"w": acg.tensor([2.0, 3.0], dtype=acg.float64)}

    class ReadsGlobal(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g * weights["w"]
    for name, mode in MODES.items():
        ca.reset()
        for value in (2.0, 5.0):
            weights["w"] = acg.tensor([value, 3.0], dtype=acg.float64)
            scale = acg.tensor([value, -1.0], dtype=acg.float64)
            x = acg.tensor([1.0, 2.0], dtype=acg.float64, requires_grad=True)
            x.register_hook(ca.pure_hook(lambda g: g * scale))
            with mode():
                ReadsGlobal.apply(x).sum().backward()
            assert x.grad.tolist() == [value * value, -3.0], (name, value)


def test_regression_pure_hook_reads_its_closure_each_time():
    """A pure hook traced into the graph still sees the current contents of a list, a
    dict and a tensor it closes over (eager semantics), changed between backwards."""
    box, cfg, t = [2.0], {"s": 1.5}, acg.tensor([1.0, 3.0], dtype=acg.float64)

    @ca.pure_hook
    def hook(g):
        return g * box[0] * cfg["s"] * t
    for name, mode in MODES.items():
        ca.reset()
        box[0], cfg["s"] = 2.0, 1.5
        t.copy_(acg.tensor([1.0, 3.0], dtype=acg.float64))
        for step in range(3):
            x = acg.tensor([1.0, 2.0], dtype=acg.float64, requires_grad=True)
            x.register_hook(hook)
            with mode():
                (x * 2.0).sum().backward()
            want = [2.0 * box[0] * cfg["s"] * v for v in t.tolist()]
            assert x.grad.tolist() == want, (name, step)
            box[0], cfg["s"] = box[0] + 1.0, cfg["s"] * 2.0
            with acg.no_grad():
                t.mul_(2.0)
