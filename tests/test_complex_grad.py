"""Gradients of complex programs in PyTorch's convention: for a real loss L of a complex z,
``z.grad = dL/dRe(z) + i dL/dIm(z)``, so an analytic op passes ``g * conj(f'(z))`` back
(matmul: ``g @ b.mH``). One table drives every check: the gradient of
``sum(Re(out * w))`` against ``jax.grad`` of the jnp twin (conjugated: jax's gradient is the
conjugate of PyTorch's), in every execution mode, and against PyTorch where installed.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg

jax.config.update("jax_enable_x64", True)


class Case(NamedTuple):
    name: str
    call: Callable          # call(lib, *tensors) for acg and torch alike
    twin: Callable | None   # the same function on jnp arrays (None: PyTorch is the oracle)
    inputs: tuple           # numpy arrays; every one requires grad


def _z(*shape: int, seed: int = 0) -> np.ndarray:
    r = np.random.default_rng(seed + sum(shape))
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


def _r(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 7).standard_normal(shape)


def _conv1d(x: Any, w: Any) -> Any:
    return jax.lax.conv_general_dilated(x, w, (1,), "VALID",
                                        dimension_numbers=("NCH", "OIH", "NCH"))


CASES = [
    # products: each operand's gradient reads the conjugate of the others
    Case("matmul_mm", lambda L, a, b: a @ b, jnp.matmul, (_z(2, 3), _z(3, 4))),
    Case("matmul_vv", lambda L, a, b: L.matmul(a, b), jnp.matmul, (_z(3), _z(3, seed=1))),
    Case("matmul_mv_batched", lambda L, a, b: L.matmul(a, b), jnp.matmul, (_z(2, 2, 3), _z(3))),
    Case("mm", lambda L, a, b: L.mm(a, b), jnp.matmul, (_z(2, 3), _z(3, 2))),
    Case("bmm", lambda L, a, b: L.bmm(a, b), jnp.matmul, (_z(2, 2, 3), _z(2, 3, 2))),
    Case("mv", lambda L, a, b: L.mv(a, b), jnp.matmul, (_z(2, 3), _z(3))),
    Case("dot", lambda L, a, b: L.dot(a, b), jnp.dot, (_z(3), _z(3, seed=1))),
    Case("vdot", lambda L, a, b: L.vdot(a, b), jnp.vdot, (_z(3), _z(3, seed=1))),
    Case("einsum", lambda L, a, b: L.einsum("i,i->", a, b), lambda a, b: jnp.sum(a * b),
         (_z(2), _z(2, seed=1))),
    Case("einsum_bij", lambda L, a, b: L.einsum("bij,bjk->bik", a, b),
         lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (_z(2, 2, 3), _z(2, 3, 2))),
    Case("outer", lambda L, a, b: L.outer(a, b), jnp.outer, (_z(3), _z(2))),
    Case("addmm", lambda L, c, a, b: L.addmm(c, a, b, beta=0.5 + 1j, alpha=2 - 1j),
         lambda c, a, b: (0.5 + 1j) * c + (2 - 1j) * (a @ b), (_z(2, 4), _z(2, 3), _z(3, 4))),
    Case("baddbmm", lambda L, c, a, b: L.baddbmm(c, a, b, alpha=2),
         lambda c, a, b: c + 2 * (a @ b), (_z(2, 2, 2), _z(2, 2, 3), _z(2, 3, 2))),
    Case("addmv", lambda L, c, a, b: L.addmv(c, a, b), lambda c, a, b: c + a @ b,
         (_z(2), _z(2, 3), _z(3))),
    Case("tensordot", lambda L, a, b: L.tensordot(a, b, dims=([1], [0])),
         lambda a, b: jnp.tensordot(a, b, ([1], [0])), (_z(2, 3), _z(3, 4))),
    Case("linear", lambda L, x, w, b: L.nn.functional.linear(x, w, b),
         lambda x, w, b: x @ w.T + b, (_z(2, 3), _z(4, 3), _z(4))),
    Case("inner", lambda L, a, b: L.inner(a, b), jnp.inner, (_z(2, 3), _z(4, 3))),
    Case("kron", lambda L, a, b: L.kron(a, b), jnp.kron, (_z(2, 2), _z(2, 3))),
    Case("conv1d", lambda L, x, w: L.nn.functional.conv1d(x, w), _conv1d,
         (_z(1, 2, 5), _z(3, 2, 2))),
    Case("conv_transpose1d", lambda L, x, w: L.nn.functional.conv_transpose1d(x, w, stride=2),
         None, (_z(1, 2, 4), _z(2, 3, 3))),
    Case("mul_complex_scalar", lambda L, a: a * (1 + 2j) - (0.5j + 1) / (a + 3),
         lambda a: a * (1 + 2j) - (0.5j + 1) / (a + 3), (_z(3),)),
    Case("add_complex_alpha", lambda L, a, b: L.add(a, b, alpha=1 + 1j),
         lambda a, b: a + (1 + 1j) * b, (_z(3), _z(3, seed=1))),
    Case("real_times_complex", lambda L, x, z: x * z, jnp.multiply, (_r(3), _z(3))),
    # analytic elementwise functions and reductions
    Case("exp_log", lambda L, a: a.exp() + (a + 3).log(), lambda a: jnp.exp(a) + jnp.log(a + 3),
         (_z(3),)),
    Case("trig", lambda L, a: a.sin() * a.cos() + a.tanh() + a.sigmoid(),
         lambda a: jnp.sin(a) * jnp.cos(a) + jnp.tanh(a) + jax.nn.sigmoid(a), (_z(3),)),
    Case("sqrt_reciprocal", lambda L, a: (a + 3).sqrt() + a.reciprocal() + a.rsqrt(),
         lambda a: jnp.sqrt(a + 3) + 1 / a + 1 / jnp.sqrt(a), (_z(3),)),
    Case("pow", lambda L, a, b: a ** 2 + a.pow(3) + a.pow(1.5) + (a + 3).pow(b) + 2 ** a,
         lambda a, b: a ** 2 + a ** 3 + a ** 1.5 + (a + 3) ** b + 2 ** a,
         (_z(3), _z(3, seed=1))),
    Case("prod_cumprod", lambda L, a: a.prod() + a.cumprod(0),
         lambda a: jnp.prod(a) + jnp.cumprod(a), (_z(4),)),
    Case("logsumexp", lambda L, a: L.logsumexp(a, 0), lambda a: jax.nn.logsumexp(a, 0),
         (_z(3),)),
    Case("norm", lambda L, a: a.norm(), jnp.linalg.norm, (_z(3),)),
]
_IDS = [c.name for c in CASES]


def _weight(shape: tuple) -> np.ndarray:
    r = np.random.default_rng(99)
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


def _grads(lib: Any, case: Case, mode: Any = None) -> list:
    leaves = [lib.tensor(a, requires_grad=True) for a in case.inputs]
    out = case.call(lib, *leaves)
    loss = (out * lib.tensor(_weight(tuple(out.shape)))).real.sum()
    if mode is None:
        loss.backward()
    else:
        with mode():
            loss.backward()
    return [np.asarray(t.grad.resolve_conj().numpy() if lib is not acg else t.grad.numpy())
            for t in leaves]


def _jax_grads(case: Case) -> list:
    def loss(*xs: Any) -> Any:
        out = case.twin(*xs)
        return jnp.sum(jnp.real(out * _weight(jnp.shape(out))))
    got = jax.grad(loss, argnums=tuple(range(len(case.inputs))))(*case.inputs)
    # jax's gradient of a real function of z is dL/dx - i dL/dy; real inputs stay real
    return [np.conj(np.asarray(g)) for g in got]


@pytest.mark.parametrize("case", [c for c in CASES if c.twin is not None],
                         ids=[c.name for c in CASES if c.twin is not None])
def test_grads_match_jax_in_every_mode(case: Case, mode) -> None:
    expected = _jax_grads(case)
    for got, want in zip(_grads(acg, case, mode), expected):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9, err_msg=case.name)


@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_grads_match_torch(case: Case) -> None:
    torch = pytest.importorskip("torch")
    for got, want in zip(_grads(acg, case), _grads(torch, case)):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9, err_msg=case.name)


def test_repro_einsum_gradient_is_conj_of_other_operand(mode) -> None:
    """The reported program: einsum('i,i->', a, b).real's gradient in a is conj(b)."""
    b_np = np.array([0.5 - 1j, 2 + 1j])
    for f in (lambda a, b: acg.einsum("i,i->", a, b), lambda a, b: a @ b, acg.dot):
        a = acg.tensor([1 + 2j, 3 - 1j], dtype=acg.complex128, requires_grad=True)  # as b
        with mode():
            f(a, acg.tensor(b_np)).real.backward()
        np.testing.assert_allclose(a.grad.numpy(), np.conj(b_np))


def test_complex_gradient_of_real_input_takes_real_part_without_warning() -> None:
    x = acg.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x * acg.tensor([1j, 2 + 1j])).real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 2.0])


def test_mH_is_the_conjugate_transpose() -> None:
    z = _z(2, 3)
    np.testing.assert_array_equal(acg.tensor(z).mH.numpy(), z.conj().T)
    np.testing.assert_array_equal(acg.tensor(z.real).mH.numpy(), z.real.T)


def test_abs_of_complex_is_real_inside_acg_compile() -> None:
    """An STFT magnitude feeding a real layer traces as one graph: ``z.abs()`` of a complex
    tensor is float32 in the trace as eagerly, and the gradient equals eager's."""
    acg.manual_seed(0)
    conv = acg.nn.Conv1d(3, 2, 1)
    rng = np.random.default_rng(0)
    parts = [rng.standard_normal((1, 3, 4)).astype(np.float32) for _ in range(2)]

    def loss(re: acg.Tensor, im: acg.Tensor) -> acg.Tensor:
        z = acg.complex(re, im)
        assert z.abs().dtype is acg.float32 and acg.absolute(z).dtype is acg.float32
        return conv(z.abs()).square().sum()

    grads = []
    for fn in (loss, acg.compile(loss, fullgraph=True)):
        re, im = (acg.tensor(p, requires_grad=True) for p in parts)
        fn(re, im).backward()
        grads.append((re.grad.numpy(), im.grad.numpy()))
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-5, atol=1e-6)
    # the oracle: d|z|^2-weighted sum through jax
    w = conv.weight.detach().numpy()[:, :, 0]
    b = conv.bias.detach().numpy()

    def ref(re: Any, im: Any) -> Any:
        mag = jnp.abs(re + 1j * im)[0]
        return jnp.sum((jnp.asarray(w) @ mag + jnp.asarray(b)[:, None]) ** 2)
    want = jax.grad(ref, argnums=(0, 1))(*parts)
    np.testing.assert_allclose(grads[0][0], want[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grads[0][1], want[1], rtol=1e-4, atol=1e-5)
