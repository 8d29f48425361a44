"""kernels/_bridge.jaxop: a JAX function as an op. Values against the JAX function itself,
gradients against ``jax.vjp``, double backward against JAX's second derivatives, in every
execution mode; complex gradients in PyTorch's conjugate convention (against torch); the shape
rule under ``acg.compile``; ``differentiable=False``; ``check`` errors.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.kernels._bridge import jaxop


def _two_out(x, y):
    return jnp.sin(x) * y, (x ** 2).sum(-1) + jnp.exp(y).sum(-1)


def _check_pos(x, y=None):
    if x.ndim != 2:
        raise RuntimeError(f"bridge_test_pair: expected a 2-D x, got {x.ndim}-D")


PAIR = jaxop("bridge_test_pair(Tensor x, Tensor y) -> (Tensor, Tensor)", _two_out,
             check=_check_pos)
SCALE = jaxop("bridge_test_scale(Tensor x, float alpha=2.0) -> Tensor",
              lambda x, alpha=2.0: jnp.tanh(x) * alpha)
ONLY_X = jaxop("bridge_test_only_x(Tensor x, Tensor y) -> Tensor",
               lambda x, y: x ** 3 * y, diff=("x",))
SQUARE_C = jaxop("bridge_test_square_c(Tensor z) -> Tensor", lambda z: z * z * jnp.conj(z))
ARGMAX = jaxop("bridge_test_argmax(Tensor x) -> Tensor", lambda x: jnp.argmax(x, -1),
               differentiable=False)


def _data(seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 4)), rng.standard_normal((3, 4))


def test_values_and_grads_match_jax_vjp(mode) -> None:
    x0, y0 = _data()
    x, y = acg.tensor(x0, requires_grad=True), acg.tensor(y0, requires_grad=True)
    a, b = PAIR(x, y)
    for got, want in zip((a, b), _two_out(x0, y0)):
        np.testing.assert_allclose(got.detach().numpy(), np.asarray(want), rtol=1e-12)
    ga, gb = np.random.default_rng(1).standard_normal((3, 4)), np.arange(3.0)
    with mode():
        ((a * acg.tensor(ga)).sum() + (b * acg.tensor(gb)).sum()).backward()
    _, pull = jax.vjp(_two_out, x0, y0)
    wx, wy = pull((ga, gb))
    np.testing.assert_allclose(x.grad.detach().numpy(), np.asarray(wx), rtol=1e-10)
    np.testing.assert_allclose(y.grad.detach().numpy(), np.asarray(wy), rtol=1e-10)


def test_one_output_unused_gets_zero_cotangent(mode) -> None:
    x0, y0 = _data(2)
    x = acg.tensor(x0, requires_grad=True)
    a, _ = PAIR(x, acg.tensor(y0))
    with mode():
        a.sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), np.cos(x0) * y0, rtol=1e-12)


def test_double_backward_matches_jax_hessian(mode) -> None:
    x0, y0 = _data(3)
    x, y = acg.tensor(x0, requires_grad=True), acg.tensor(y0, requires_grad=True)
    a, b = PAIR(x, y)
    loss = (a ** 2).sum() + b.sum()
    gx, gy = acg.autograd.grad(loss, (x, y), create_graph=True)
    v = np.random.default_rng(4).standard_normal((3, 4))
    with mode():
        ((gx * acg.tensor(v)).sum() + gy.sum()).backward()

    def f(x, y):
        a, b = _two_out(x, y)
        return (a ** 2).sum() + b.sum()

    def g(x, y):
        gx, gy = jax.grad(f, (0, 1))(x, y)
        return (gx * v).sum() + gy.sum()
    wx, wy = jax.grad(g, (0, 1))(x0, y0)
    np.testing.assert_allclose(gx.detach().numpy(), np.asarray(jax.grad(f)(x0, y0)), rtol=1e-10)
    np.testing.assert_allclose(x.grad.detach().numpy(), np.asarray(wx), rtol=1e-9)
    np.testing.assert_allclose(y.grad.detach().numpy(), np.asarray(wy), rtol=1e-9)


def test_third_order_derivative() -> None:
    x = acg.tensor([0.3, -0.7], dtype=acg.float64, requires_grad=True)
    g1, = acg.autograd.grad(SCALE(x, 1.5).sum(), x, create_graph=True)
    g2, = acg.autograd.grad(g1.sum(), x, create_graph=True)
    g2.sum().backward()
    d3 = jax.vmap(jax.grad(jax.grad(jax.grad(lambda t: 1.5 * jnp.tanh(t)))))
    np.testing.assert_allclose(x.grad.detach().numpy(), np.asarray(d3(jnp.array([0.3, -0.7]))),
                               rtol=1e-10)


def test_scalar_argument_and_diff_subset(mode) -> None:
    x0, y0 = _data(5)
    x, y = acg.tensor(x0, requires_grad=True), acg.tensor(y0, requires_grad=True)
    np.testing.assert_allclose(SCALE(x, 0.5).detach().numpy(), 0.5 * np.tanh(x0), rtol=1e-12)
    with mode():
        ONLY_X(x, y).sum().backward()
    np.testing.assert_allclose(x.grad.detach().numpy(), 3 * x0 ** 2 * y0, rtol=1e-12)
    assert y.grad is None  # y is not in diff: no gradient flows to it


def test_complex_gradient_is_pytorchs_convention(mode) -> None:
    torch = pytest.importorskip("torch")
    z0 = np.array([1.0 + 2.0j, -0.5 + 0.25j, 0.3 - 1.1j])
    z = acg.tensor(z0, requires_grad=True)
    out = SQUARE_C(z)
    with mode():
        (out.abs() ** 2).sum().backward()
    zt = torch.tensor(z0, requires_grad=True)
    ((zt * zt * zt.conj()).abs() ** 2).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), z0 * z0 * np.conj(z0), rtol=1e-12)
    np.testing.assert_allclose(z.grad.detach().numpy(), zt.grad.detach().numpy(), rtol=1e-10)


def test_nondifferentiable_op_and_integer_output() -> None:
    x = acg.tensor([[1.0, 3.0, 2.0]], requires_grad=True)
    i = ARGMAX(x)
    assert i.tolist() == [1] and not i.requires_grad


def test_check_runs_first_with_its_error() -> None:
    with pytest.raises(RuntimeError, match="expected a 2-D x, got 1-D"):
        PAIR(acg.ones(3), acg.ones(3))


def test_shape_rule_under_compile() -> None:
    x0, y0 = _data(6)
    x, y = acg.tensor(x0, requires_grad=True), acg.tensor(y0, requires_grad=True)

    def f(x, y):
        a, b = PAIR(x, y)
        return a.sum() * b.mean()
    loss = acg.compile(f)(x, y)
    loss.backward()
    wl, (wx, wy) = jax.value_and_grad(
        lambda x, y: (lambda a, b: a.sum() * b.mean())(*_two_out(x, y)), (0, 1))(x0, y0)
    np.testing.assert_allclose(loss.item(), float(wl), rtol=1e-12)
    np.testing.assert_allclose(x.grad.detach().numpy(), np.asarray(wx), rtol=1e-10)
    np.testing.assert_allclose(y.grad.detach().numpy(), np.asarray(wy), rtol=1e-10)
