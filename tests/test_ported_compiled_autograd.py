"""PyTorch's test/inductor/test_compiled_autograd.py behaviours, re-expressed in our API.

Integer scalars are lifted: a Python int a binary op or a custom Function's ctx
keeps is a runtime input (one capture, one XLA program for every value), unless
backward decides on it (a dim), where it specialises with a guard. Every test
runs in the three modes and asserts gradients against a hand-written reference,
plus capture/compile counts in the compiled modes.
"""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from conftest import assert_close

ca = acg.compiled_autograd


def expect_counts(mode, captures: int, compiles: int | None = None) -> None:
    """Captures in both compiled modes; XLA compiles with the JAX backend only."""
    if not mode.compiled:
        return
    assert ca.counters["captures"] == captures, dict(ca.counters)
    if mode.name == "compiled-jax" and compiles is not None:
        assert ca.counters["compiles"] == compiles, dict(ca.counters)


def test_int_multiplier_is_lifted(mode):
    """(x * i).sum().backward() for i in range(5): one capture, one XLA program."""
    x = acg.ones(3, requires_grad=True)
    for i in range(5):
        x.grad = None
        with mode():
            (x * i).sum().backward()
        assert x.grad.tolist() == [float(i)] * 3
    expect_counts(mode, captures=1, compiles=1)


@pytest.mark.parametrize("op", ["add", "sub", "rsub", "div", "clamp"])
def test_int_scalars_of_binary_ops_are_lifted(mode, op):
    """Each int scalar of an op is a runtime input: values change, the graph does not."""
    fns = {"add": lambda x, i: (x + i) * (x + i), "sub": lambda x, i: (x - i) * (x - i),
           "rsub": lambda x, i: (i - x) * (i - x), "div": lambda x, i: x / i,
           "clamp": lambda x, i: x.clamp(-i, i) * x}
    refs = {"add": lambda v, i: 2 * (v + i), "sub": lambda v, i: 2 * (v - i),
            "rsub": lambda v, i: 2 * (v - i), "div": lambda v, i: np.full_like(v, 1 / i),
            "clamp": lambda v, i: np.where(np.abs(v) <= i, 2 * v, np.sign(v) * i)}
    v = np.array([-2.5, -0.5, 0.7, 3.0], np.float32)
    for i in (1, 2, 3):
        x = acg.tensor(v, requires_grad=True)
        with mode():
            fns[op](x, i).sum().backward()
        assert_close(x.grad, refs[op](v, i), rtol=1e-6)
    expect_counts(mode, captures=1, compiles=1)


def test_zero_grad_loop_with_changing_int_multiplier(mode):
    """A training-style loop: w * (i + 1) each step, grads zeroed in between."""
    w = acg.tensor([1.0, 2.0], requires_grad=True)
    for i in range(4):
        w.grad = None
        with mode():
            ((w * (i + 1)) ** 2).sum().backward()
        assert_close(w.grad, 2 * (i + 1) ** 2 * np.array([1.0, 2.0]))
    expect_counts(mode, captures=1, compiles=1)


class _ScaleBy(acg.autograd.Function):
    """ctx keeps an int multiplier and the input's shape (a tuple of ints)."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k, ctx.shape = k, tuple(x.shape)
        return x.reshape(-1) * k

    @staticmethod
    def backward(ctx, g):
        return g.reshape(ctx.shape) * ctx.k, None


def test_custom_fn_saved_int_attr_is_lifted(mode):
    """test_custom_fn_saved_attr: an int on ctx used as a multiplier reuses the graph."""
    x = acg.ones(2, 3, requires_grad=True)
    for k in (1, 2, 5):
        x.grad = None
        with mode():
            _ScaleBy.apply(x, k).sum().backward()
        assert_close(x.grad, np.full((2, 3), k, np.float32))
    expect_counts(mode, captures=1, compiles=1)


def test_custom_fn_saved_shape_is_symbolic(mode):
    """ctx.shape = x.shape: one capture for every shape; one program, for the first (the
    other shapes, seen once, run op by op)."""
    for n in (3, 4, 5):  # (2 is 2's duck-size twin: equal sizes share a symbol)
        x = acg.ones(2, n, requires_grad=True)
        with mode():
            _ScaleBy.apply(x, 3).sum().backward()
        assert_close(x.grad, np.full((2, n), 3, np.float32))
    expect_counts(mode, captures=1, compiles=1)


class _SumOver(acg.autograd.Function):
    """ctx.d is a dim: structural, so it specialises (guarded)."""

    @staticmethod
    def forward(ctx, x, d):
        ctx.d, ctx.shape = d, tuple(x.shape)
        return x.sum(d)

    @staticmethod
    def backward(ctx, g):
        return g.unsqueeze(ctx.d).expand(ctx.shape), None


def test_int_attr_used_as_a_dim_specialises(mode):
    for d in (0, 1, 0, 1):
        x = acg.ones(2, 3, requires_grad=True)
        weights = acg.arange(3 - d, dtype=acg.float32) + 1.0
        with mode():
            (_SumOver.apply(x, d) * weights).sum().backward()
        expected = np.broadcast_to(np.arange(1.0, 4 - d).reshape((1, -1) if d == 0 else (-1, 1)),
                                   (2, 3))
        assert_close(x.grad, expected)
    expect_counts(mode, captures=2, compiles=2)  # one graph per dim, reused after


def test_int_exponent_specialises(mode):
    """x ** n: the exponent decides the formula's structure: one graph per exponent."""
    for n in (2, 3, 2):
        x = acg.tensor([1.5, -2.0], requires_grad=True)
        with mode():
            (x ** n).sum().backward()
        assert_close(x.grad, n * np.array([1.5, -2.0]) ** (n - 1), rtol=1e-6)
    expect_counts(mode, captures=2, compiles=2)


def test_recompile_on_a_new_hook_count(mode):
    """test_recompile (test_hooks): a new hook changes the graph, a new closure value
    of the same hook does not."""
    x = acg.ones(3, requires_grad=True)
    for scale in (2.0, 3.0):
        x.grad = None
        h = x.register_hook(lambda g, s=scale: g * s)
        with mode():
            (x * 2).sum().backward()
        h.remove()
        assert x.grad.tolist() == [2.0 * scale] * 3
    x.grad = None
    with mode():
        (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0] * 3
    expect_counts(mode, captures=2)
