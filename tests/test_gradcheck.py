"""acg.autograd.gradcheck / gradgradcheck: PyTorch's finite-difference checks of a
backward, in every mode; where torch is installed, its verdicts on the same functions."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.autograd.gradcheck import GradcheckError


def _cube(T, detached=False):
    """x ** 3 with a right backward: differentiable twice, or (``detached``) with its
    second derivative lost to a ``detach()``."""
    class Cube(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * (x.detach() if detached else x) ** 2
    return Cube


def _functions(T):
    """(name, fn, whether its backward is right) for a module ``T`` (acg or torch)."""
    Cube = _cube(T)

    class Wrong(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return x @ w

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g @ w.T, x.T @ g * 1.01  # w's gradient is 1 % off

    return [("cube", Cube.apply, True), ("wrong", Wrong.apply, False),
            ("ops", lambda x, w: (x @ w).tanh().sum(-1).exp(), True)]


def _inputs(T, name):
    rng = np.random.default_rng(0)
    x = T.tensor(rng.standard_normal((2, 3)), dtype=T.float64, requires_grad=True)
    w = T.tensor(rng.standard_normal((3, 2)), dtype=T.float64, requires_grad=True)
    return (x,) if name == "cube" else (x, w)


@pytest.mark.parametrize("fast", [False, True])
@pytest.mark.parametrize("case", ["cube", "wrong", "ops"])
def test_gradcheck_passes_right_backwards_and_catches_wrong_ones(mode, case, fast):
    name, fn, right = next(f for f in _functions(acg) if f[0] == case)
    inputs = _inputs(acg, name)
    with mode():
        assert acg.autograd.gradcheck(fn, inputs, fast_mode=fast, raise_exception=False) is right
        if not right:
            with pytest.raises(GradcheckError, match="Jacobian mismatch for output 0 with "
                               "respect to input 1"):
                acg.autograd.gradcheck(fn, inputs, fast_mode=fast)
    assert all(x.grad is None for x in inputs)  # a check never writes .grad


def test_gradcheck_agrees_with_torch():
    torch = pytest.importorskip("torch")
    for T in (acg, torch):
        for name, fn, right in _functions(T):
            for fast in (False, True):
                got = T.autograd.gradcheck(fn, _inputs(T, name), fast_mode=fast,
                                           raise_exception=False)
                assert got is right, (T.__name__, name, fast)
        assert T.autograd.gradgradcheck(_functions(T)[0][1], _inputs(T, "cube"))


def test_gradcheck_mismatch_shows_both_jacobians():
    """The message holds the (input numel x output numel) Jacobians: here d(x @ w)/dw, and
    the backward's 1.01 times it."""
    import re
    _, fn, _ = _functions(acg)[1]
    x, w = _inputs(acg, "wrong")
    with pytest.raises(GradcheckError) as info:
        acg.autograd.gradcheck(fn, (x, w))
    numerical, analytical = str(info.value).split("numerical:")[1].split("analytical:")

    def floats(text):
        return np.array([float(v) for v in re.findall(r"-?\d+\.\d*(?:e[-+]\d+)?", text)])
    want = np.einsum("ik,jl->klij", x.detach().numpy(), np.eye(2)).reshape(6, 4)
    np.testing.assert_allclose(floats(numerical), want.ravel(), atol=1e-6)
    np.testing.assert_allclose(floats(analytical), 1.01 * want.ravel(), atol=1e-6)


def test_a_nondeterministic_backward_is_not_reentrant():
    class Noisy(acg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 + acg.rand(g.shape, dtype=g.dtype) * 1e-4

    x = acg.ones(3, dtype=acg.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        acg.autograd.gradcheck(Noisy.apply, (x,), atol=1e-2)
    assert acg.autograd.gradcheck(Noisy.apply, (x,), atol=1e-2, nondet_tol=1e-2)


def test_gradgradcheck_catches_a_backward_that_is_not_differentiable():
    Detached = _cube(acg, detached=True)  # first derivative right, second lost
    x = acg.tensor([0.5, -1.5], dtype=acg.float64, requires_grad=True)
    assert acg.autograd.gradcheck(Detached.apply, (x,))
    assert not acg.autograd.gradgradcheck(Detached.apply, (x,), raise_exception=False)
    assert acg.autograd.gradgradcheck(lambda t: (t * t.sin()).sum(), (x,))


def test_gradcheck_bad_use():
    with pytest.raises(ValueError, match="none of them have requires_grad=True"):
        acg.autograd.gradcheck(lambda t: t * 2, (acg.ones(2, dtype=acg.float64),))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        acg.autograd.gradcheck(lambda t: t * 2, (acg.ones(2, requires_grad=True),),
                               raise_exception=False)
    assert any("Input #0 requires gradient and is not a double precision" in str(w.message)
               for w in caught)
