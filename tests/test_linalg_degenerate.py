"""Gradients of eigenvalues and singular values where they repeat (the identity, a matrix
with a double eigenvalue). When the vectors receive no gradient the backward is the values'
term alone (V diag(gL) V^H, U diag(gS) V^H), as PyTorch's, never 1/(l_i - l_j); when the
vectors are used at repeated values, the result is not finite, as in PyTorch.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import autograd_compile as acg

_Q = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))[0]
A = _Q @ np.diag([1.0, 1.0, 3.0]) @ _Q.T  # symmetric positive definite, eigenvalue 1 twice
I3 = np.eye(3)

# name: (loss of lib and X, X, the gradient in closed form)
CASES: dict[str, tuple[Callable[[Any, Any], Any], np.ndarray, np.ndarray]] = {
    "eigvalsh_sum_I": (lambda L, X: L.linalg.eigvalsh(X).sum(), I3, I3),
    "eigh_values_sum_I": (lambda L, X: L.linalg.eigh(X)[0].sum(), I3, I3),
    "eigh_values_squares_A": (lambda L, X: L.linalg.eigh(X)[0].pow(2).sum(), A, 2 * A),
    "svd_values_sum_I": (lambda L, X: L.linalg.svd(X)[1].sum(), I3, I3),
    "svd_values_sum_A": (lambda L, X: L.linalg.svd(X)[1].sum(), A, I3),  # U V^H = I (A is SPD)
    "svd_reduced_rect": (lambda L, X: L.linalg.svd(X, full_matrices=False)[1].sum(),
                         np.eye(4, 3), np.eye(4, 3)),
    "old_svd_values_A": (lambda L, X: L.svd(X)[1].sum(), A, I3),
    "svdvals_squares_A": (lambda L, X: L.linalg.svdvals(X).pow(2).sum(), A, 2 * A),
    "eigvals_sum_A": (lambda L, X: L.linalg.eigvals(X).real.sum(), A, I3),  # the trace
    "eig_values_I": (lambda L, X: L.linalg.eig(X)[0].real.pow(2).sum(), I3, 2 * I3),
}


def _grad(lib: Any, name: str, mode: Any = None) -> np.ndarray:
    loss, x, _ = CASES[name]
    X = lib.tensor(x, dtype=lib.float64, requires_grad=True)
    if mode is None:
        loss(lib, X).backward()
    else:
        with mode():
            loss(lib, X).backward()
    return X.grad.numpy()


@pytest.mark.parametrize("name", CASES)
def test_values_only_gradient_is_finite_in_every_mode(name: str, mode) -> None:
    np.testing.assert_allclose(_grad(acg, name, mode), CASES[name][2], atol=1e-10)


@pytest.mark.parametrize("name", CASES)
def test_values_only_gradient_matches_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(_grad(acg, name), _grad(torch, name), atol=1e-10)


@pytest.mark.parametrize("vectors", [lambda L, X: L.linalg.eigh(X)[1],
                                     lambda L, X: L.linalg.svd(X)[0]], ids=["eigh", "svd"])
def test_vectors_at_repeated_values_are_not_finite_as_in_torch(vectors: Callable) -> None:
    X = acg.tensor(I3, requires_grad=True)
    vectors(acg, X).pow(2).sum().backward()
    assert not np.isfinite(X.grad.numpy()).all()


# -- norms at zero: PyTorch's subgradient (sign(0) = 0, a zero slice's norm has gradient 0) --
_Z = np.zeros((2, 3, 3))
_SIGNED = np.array([[0.0, 1.0, -2.0]])
NORM_CASES: dict[str, tuple[Callable[[Any], Any], np.ndarray, np.ndarray]] = {
    "norm_all": (lambda x: acg.norm(x), _Z, _Z),
    "norm_dims": (lambda x: acg.norm(x, dim=(1, 2)), _Z, _Z),
    "method_dim": (lambda x: x.norm(dim=1), _Z, _Z),
    "p3": (lambda x: acg.norm(x, p=3), _Z, _Z),
    "fro": (lambda x: acg.norm(x, p="fro"), _Z, _Z),
    "inf": (lambda x: acg.norm(x, p=float("inf")), _Z, _Z),
    "dist": (lambda x: acg.dist(x, acg.zeros(3, dtype=acg.float64)), _Z, _Z),
    "matrix_norm": (lambda x: acg.linalg.matrix_norm(x), _Z, _Z),
    "renorm": (lambda x: acg.renorm(x, 2, 0, 1.0), _Z, np.ones_like(_Z)),
    "p1_zero_entry": (lambda x: acg.norm(x, p=1), _SIGNED, np.sign(_SIGNED)),
    "inf_zero_entry": (lambda x: acg.norm(x, p=float("inf")), _SIGNED, np.array([[0, 0, -1.]])),
}


@pytest.mark.parametrize("name", sorted(NORM_CASES))
def test_norm_gradient_at_zero(mode, name):
    loss, x, want = NORM_CASES[name]
    X = acg.tensor(x, requires_grad=True)
    with mode():
        loss(X).sum().backward()
    np.testing.assert_allclose(X.grad.numpy(), want, atol=1e-12)


def test_norm_gradient_at_zero_under_acg_compile():
    X = acg.tensor(_Z, requires_grad=True)
    acg.compile(lambda x: acg.norm(x, dim=(1, 2)).sum(), fullgraph=True)(X).backward()
    np.testing.assert_allclose(X.grad.numpy(), _Z)
