"""Leftovers of issue 21's ``func`` / ``autograd.functional`` (tails area): vmap's
``randomness`` modes as PyTorch's, and ``jacobian``/``hessian`` with ``vectorize=True``
(JAX's vmap over vjp/jvp) against PyTorch, with PyTorch's refusals.
"""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from autograd_compile.autograd.functional import hessian, jacobian

RANDOM_ERROR = "vmap: called random operation while in randomness error mode"


@pytest.mark.parametrize("draw", [lambda x: x + acg.randn(3),
                                  lambda x: acg.nn.functional.dropout(x, 0.5),
                                  lambda x: x.clone().normal_()])
def test_vmap_randomness_error_raises_pytorchs_error(draw) -> None:
    with pytest.raises(RuntimeError, match=RANDOM_ERROR):
        acg.func.vmap(draw)(acg.ones(2, 3))
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError, match=RANDOM_ERROR):
        torch.func.vmap(lambda x: x + torch.randn(3))(torch.ones(2, 3))


@pytest.mark.parametrize("grad", [False, True], ids=["plain", "requires_grad"])
def test_vmap_randomness_same_and_different(grad: bool) -> None:
    w = acg.ones(3, requires_grad=grad)  # requires_grad: the sample-by-sample path
    same = acg.func.vmap(lambda x: x * w + acg.randn(3), randomness="same")
    diff = acg.func.vmap(lambda x: x * w + acg.randn(3), randomness="different")
    a, b = same(acg.zeros(4, 3)), same(acg.zeros(4, 3))
    assert a.requires_grad == grad
    a, b = a.detach().numpy(), b.detach().numpy()
    np.testing.assert_array_equal(a, np.broadcast_to(a[0], a.shape))  # one draw for all
    assert not np.array_equal(a, b)  # each call draws afresh
    d = diff(acg.zeros(4, 3)).detach().numpy()
    assert len({tuple(r) for r in d.tolist()}) == 4  # a draw per sample
    assert abs(d.mean()) < 1.5 and 0.2 < d.std() < 3  # standard normal draws, not constants


def test_vmap_different_dropout_masks_differ_per_sample_and_keep_expectation() -> None:
    out = acg.func.vmap(lambda x: acg.nn.functional.dropout(x, 0.5),
                        randomness="different")(acg.ones(64, 32)).numpy()
    assert set(np.unique(out).tolist()) <= {0.0, 2.0}
    assert len({r.tobytes() for r in out}) == 64
    assert abs(out.mean() - 1.0) < 0.1


def test_vmap_without_random_ops_leaves_the_global_stream_alone() -> None:
    f = acg.func.vmap(lambda x: x * 2, randomness="different")
    f(acg.ones(2))
    acg.manual_seed(3)
    first = acg.rand(2).numpy()
    acg.manual_seed(3)
    f(acg.ones(2))
    np.testing.assert_array_equal(acg.rand(2).numpy(), first)


def test_vmap_grad_with_different_randomness_is_one_program_per_sample_noise() -> None:
    g = acg.func.vmap(acg.func.grad(lambda x: (x * acg.randn(3)).sum()), randomness="different")
    out = g(acg.zeros(5, 3)).numpy()
    assert len({r.tobytes() for r in out}) == 5


# -- vectorize=True ------------------------------------------------------------------------------
def _two(a, b):
    return (a[:2] * b).sin(), (a ** 2).sum() * b


def _scalar(a, b):
    return (a.sin() * a).sum() * (b ** 2).sum()


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_vectorized_matches_torch(strategy: str) -> None:
    torch = pytest.importorskip("torch")
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0])
    tf = torch.autograd.functional
    want = tf.jacobian(_two, (torch.tensor(x), torch.tensor(y)), vectorize=True,
                       strategy=strategy)
    got = jacobian(_two, (acg.tensor(x), acg.tensor(y)), vectorize=True, strategy=strategy)
    for g_row, w_row in zip(got, want):
        for g, w in zip(g_row, w_row):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
    single = jacobian(lambda a: a ** 3, acg.tensor(x), vectorize=True)
    np.testing.assert_allclose(single.numpy(), np.diag(3 * x ** 2), rtol=1e-12)


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_hessian_vectorized_matches_torch(strategy: str) -> None:
    torch = pytest.importorskip("torch")
    x, y = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0])
    want = torch.autograd.functional.hessian(_scalar, (torch.tensor(x), torch.tensor(y)),
                                             vectorize=True, outer_jacobian_strategy=strategy)
    got = hessian(_scalar, (acg.tensor(x), acg.tensor(y)), vectorize=True,
                  outer_jacobian_strategy=strategy)
    for g_row, w_row in zip(got, want):
        for g, w in zip(g_row, w_row):
            np.testing.assert_allclose(g.numpy(), w.detach().numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="single element"):
        hessian(lambda a: a ** 2, acg.tensor(x), vectorize=True)


def test_vectorized_with_create_graph_stays_in_the_graph(mode) -> None:
    x = acg.tensor([1.0, 2.0], requires_grad=True)
    j = jacobian(lambda a: a ** 3, x, create_graph=True, vectorize=True)
    with mode():
        j.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.array([1.0, 2.0]))


REFUSALS = [(dict(strict=True, vectorize=True), RuntimeError),
            (dict(strategy="forward-mode"), NotImplementedError),
            (dict(strategy="forward-mode", vectorize=True, create_graph=True),
             NotImplementedError)]


@pytest.mark.parametrize("kwargs,error", REFUSALS)
def test_jacobian_refusals_match_torch(kwargs: dict, error: type) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(error) as theirs:
        torch.autograd.functional.jacobian(lambda a: a ** 2, torch.ones(2), **kwargs)
    with pytest.raises(error) as ours:
        jacobian(lambda a: a ** 2, acg.ones(2), **kwargs)
    assert str(ours.value) == str(theirs.value)


# -- vmap over inputs that require grad: one batched op, not a loop ------------------------------
def test_vmap_with_grad_inputs_is_one_op_in_every_mode(mode) -> None:
    rng = np.random.default_rng(0)
    xv, wv = rng.standard_normal((5, 3)), rng.standard_normal(3)
    x, w = acg.tensor(xv, requires_grad=True), acg.tensor(wv, requires_grad=True)
    out = acg.func.vmap(lambda a, b: (a * b).sin().sum(), in_dims=(0, None))(x, w)
    assert out.grad_fn.name().startswith("Vmap")  # one node, not a stack of per-sample graphs
    with mode():
        (out * acg.tensor(np.arange(5.0))).sum().backward()
    c = np.cos(xv * wv) * np.arange(5.0)[:, None]
    np.testing.assert_allclose(x.grad.numpy(), c * wv, rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), (c * xv).sum(0), rtol=1e-12)


def test_vmap_with_grad_inputs_differentiates_twice_and_keeps_output_structure() -> None:
    x = acg.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    y = acg.func.vmap(lambda a: (a ** 3).sum())(x)
    g, = acg.autograd.grad(y.sum(), x, create_graph=True)
    gg, = acg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy(), rtol=1e-12)
    pair = acg.func.vmap(lambda a: (a * 2, a.sum()), out_dims=0)(x)
    assert isinstance(pair, tuple) and pair[0].shape == (2, 3) and pair[1].shape == (2,)
    assert pair[0].requires_grad and pair[1].requires_grad


def test_vmap_capturing_a_tensor_that_requires_grad_still_differentiates() -> None:
    c = acg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = acg.ones(4, 3, requires_grad=True)
    out = acg.func.vmap(lambda a: (a * c).sum())(x)  # c is invisible to JAX: sample by sample
    out.sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), [4.0, 4.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), np.tile([1.0, 2.0, 3.0], (4, 1)))
