"""acg.linalg (and the top-level linalg/complex functions) against PyTorch: a table of
(name, call, sample inputs) run through both libraries in float64, values compared, then
gradients of a weighted sum of the outputs compared with torch's; errors with torch's class.
Decompositions whose factors are unique only up to sign or phase (eigh, svd, eig) are checked
through gauge-invariant functions of them, as PyTorch's own tests do.
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, NamedTuple

import numpy as np
import pytest

import autograd_compile as acg

torch = pytest.importorskip("torch")


class Case(NamedTuple):
    name: str
    call: Callable  # call(lib, *tensors) -> tensor or tuple of tensors
    inputs: tuple   # numpy arrays (float/complex ones require grad)
    grad: bool = True


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _sq(n: int = 3, seed: int = 0, batch: tuple = ()) -> np.ndarray:
    """A well-conditioned square matrix."""
    return _rng(seed).standard_normal(batch + (n, n)) + n * np.eye(n)


def _spd(n: int = 3, seed: int = 0, batch: tuple = ()) -> np.ndarray:
    b = _rng(seed).standard_normal(batch + (n, n))
    return b @ np.swapaxes(b, -1, -2) + n * np.eye(n)


def _mat(m: int, n: int, seed: int = 0) -> np.ndarray:
    return _rng(seed).standard_normal((m, n))


def _cplx(shape: tuple, seed: int = 0) -> np.ndarray:
    r = _rng(seed)
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


def _signfree(v):
    """Columns of a real orthogonal factor squared: invariant to each column's sign."""
    return v * v


CASES = [
    Case("det", lambda L, a: L.linalg.det(a), (_sq(3, 1, (2,)),)),
    Case("det_complex", lambda L, a: L.linalg.det(a), (_cplx((3, 3), 2) + 3 * np.eye(3),)),
    Case("slogdet", lambda L, a: tuple(L.linalg.slogdet(a)), (_sq(3, 2) - 6 * np.eye(3),)),
    Case("logdet", lambda L, a: L.logdet(a), (_spd(3, 3),)),
    Case("inv", lambda L, a: L.linalg.inv(a), (_sq(4, 4, (2,)),)),
    Case("inv_ex", lambda L, a: tuple(L.linalg.inv_ex(a)), (_sq(3, 5),)),
    Case("inverse", lambda L, a: L.inverse(a), (_sq(3, 6),)),
    Case("solve", lambda L, a, b: L.linalg.solve(a, b), (_sq(3, 7, (2,)), _mat(3, 2, 8))),
    Case("solve_vector", lambda L, a, b: L.linalg.solve(a, b), (_sq(3, 9), _rng(1).random(3))),
    Case("solve_right", lambda L, a, b: L.linalg.solve(a, b, left=False),
         (_sq(3, 10), _mat(2, 3, 11))),
    Case("solve_ex", lambda L, a, b: tuple(L.linalg.solve_ex(a, b)), (_sq(3, 12), _mat(3, 1))),
    Case("lstsq", lambda L, a, b: L.linalg.lstsq(a, b).solution, (_mat(5, 3, 13), _mat(5, 2))),
    Case("cholesky", lambda L, a: L.linalg.cholesky(a), (_spd(3, 14, (2,)),)),
    Case("cholesky_upper", lambda L, a: L.linalg.cholesky(a, upper=True), (_spd(3, 15),)),
    Case("cholesky_ex", lambda L, a: tuple(L.linalg.cholesky_ex(a)), (_spd(4, 16),)),
    # values only: torch's complex cholesky gradient is not Hermitian, ours is its Hermitian part
    Case("cholesky_complex", lambda L, a: L.linalg.cholesky(a),
         ((lambda c: c @ c.conj().T + 3 * np.eye(3))(_cplx((3, 3), 17)),), grad=False),
    Case("cholesky_old", lambda L, a: L.cholesky(a), (_spd(3, 18),)),
    Case("cholesky_solve", lambda L, b, a: L.cholesky_solve(b, L.linalg.cholesky(a)),
         (_mat(3, 2, 19), _spd(3, 20))),
    Case("cholesky_inverse", lambda L, a: L.cholesky_inverse(L.linalg.cholesky(a)),
         (_spd(3, 21),)),
    Case("qr", lambda L, a: tuple(L.linalg.qr(a)), (_mat(4, 3, 22),)),
    Case("qr_complete", lambda L, a: tuple(L.linalg.qr(a, mode="complete")), (_mat(3, 3, 23),),
         ),
    Case("qr_r", lambda L, a: L.linalg.qr(a, mode="r")[1], (_mat(4, 3, 24),), grad=False),
    Case("eigh", lambda L, a: (lambda w, v: (w, _signfree(v)))(*L.linalg.eigh(a)),
         (_spd(3, 25),)),
    Case("eigh_upper", lambda L, a: L.linalg.eigh(a, UPLO="U")[0], (_mat(3, 3, 26),)),
    Case("eigvalsh", lambda L, a: L.linalg.eigvalsh(a), (_spd(4, 27),)),
    Case("eigvals", lambda L, a: L.linalg.eigvals(a), (np.diag([1.0, 2.0, 4.0]) + 0.1 * _mat(3, 3),)),
    Case("eig", lambda L, a: (lambda w, v: (w, v.abs()))(*L.linalg.eig(a)),
         (np.diag([1.0, 2.0, 4.0]) + 0.1 * _mat(3, 3, 28),)),
    Case("svd", lambda L, a: (lambda u, s, vh: (_signfree(u), s, _signfree(vh)))(
        *L.linalg.svd(a, full_matrices=False)), (_mat(4, 3, 29),)),
    Case("svd_full_values", lambda L, a: L.linalg.svd(a)[1], (_mat(3, 4, 30),)),
    Case("svd_old", lambda L, a: (lambda u, s, v: (_signfree(u), s, _signfree(v)))(*L.svd(a)),
         (_mat(4, 3, 31),)),
    Case("svdvals", lambda L, a: L.linalg.svdvals(a), (_mat(3, 5, 32),)),
    Case("pinv", lambda L, a: L.linalg.pinv(a), (_mat(4, 3, 33),)),
    Case("pinv_hermitian", lambda L, a: L.linalg.pinv(a, hermitian=True), (_spd(3, 34),)),
    Case("pinverse", lambda L, a: L.pinverse(a), (_mat(3, 2, 35),)),
    Case("matrix_rank", lambda L, a: L.linalg.matrix_rank(a),
         (_mat(4, 2, 36) @ _mat(2, 4, 37),), grad=False),
    Case("matrix_power_3", lambda L, a: L.linalg.matrix_power(a, 3), (_mat(3, 3, 38),)),
    Case("matrix_power_neg", lambda L, a: L.linalg.matrix_power(a, -2), (_sq(3, 39),)),
    Case("matrix_power_0", lambda L, a: L.matrix_power(a, 0), (_mat(3, 3, 40),)),
    Case("matrix_exp", lambda L, a: L.linalg.matrix_exp(a), (0.5 * _mat(3, 3, 41),)),
    Case("cross", lambda L, a, b: L.linalg.cross(a, b), (_mat(2, 3, 42), _mat(2, 3, 43))),
    Case("cross_dim", lambda L, a, b: L.linalg.cross(a, b, dim=0), (_mat(3, 2, 44), _mat(3, 2))),
    Case("cross_old", lambda L, a, b: L.cross(a, b), (_mat(3, 2, 45), _mat(3, 2, 46))),
    Case("multi_dot", lambda L, a, b, c: L.linalg.multi_dot([a, b, c]),
         (_rng(47).random(3), _mat(3, 4), _mat(4, 2, 48))),
    Case("householder_product", lambda L, a, t: L.linalg.householder_product(a, t),
         (_mat(4, 3, 49), _rng(50).random(2))),
    Case("tensorinv", lambda L, a: L.linalg.tensorinv(a, ind=1),
         (_sq(4, 51).reshape(4, 2, 2),)),
    Case("tensorsolve", lambda L, a, b: L.linalg.tensorsolve(a, b),
         (_sq(6, 52).reshape(2, 3, 6), _mat(2, 3, 53))),
    Case("vander", lambda L, x: L.linalg.vander(x, N=4), (_rng(54).random(3),)),
    # torch.vander's and cond(p=1)'s own backward fail (in-place version errors): the oracle
    # is torch's equivalent spelling
    Case("vander_old", lambda L, x: L.vander(x, 3, True) if L is acg else L.linalg.vander(x, N=3),
         (_rng(55).random(4),)),
    Case("vecdot", lambda L, x, y: L.linalg.vecdot(x, y), (_cplx((2, 3), 56), _cplx((2, 3), 57))),
    Case("matmul", lambda L, a, b: L.linalg.matmul(a, b), (_mat(2, 3, 58), _mat(3, 2))),
    Case("diagonal", lambda L, a: L.linalg.diagonal(a, offset=1), (_mat(3, 4, 59),)),
    Case("lu_factor", lambda L, a: tuple(L.linalg.lu_factor(a)), (_mat(3, 3, 60),)),
    Case("lu_factor_ex", lambda L, a: tuple(L.linalg.lu_factor_ex(a)), (_mat(4, 4, 61),)),
    Case("lu", lambda L, a: tuple(L.linalg.lu(a)), (_mat(4, 3, 62),)),
    Case("lu_solve", lambda L, a, b: L.linalg.lu_solve(*L.linalg.lu_factor(a), b),
         (_sq(3, 63), _mat(3, 2, 64))),
    Case("lu_solve_adjoint_right", lambda L, a, b: L.linalg.lu_solve(
        *L.linalg.lu_factor(a), b, left=False, adjoint=True), (_sq(3, 65), _mat(2, 3, 66))),
    Case("lu_unpack", lambda L, a: tuple(L.lu_unpack(*L.linalg.lu_factor(a))), (_mat(3, 3, 67),)),
    Case("lu_solve_old", lambda L, b, a: L.lu_solve(b, *L.linalg.lu_factor(a)),
         (_mat(3, 2, 68), _sq(3, 69))),
    # LDL: no gradient in PyTorch
    Case("ldl_factor", lambda L, a: tuple(L.linalg.ldl_factor(a)), (_mat(4, 4, 101) + _mat(4, 4, 101).T,),
         grad=False),
    Case("ldl_factor_ex_batch_hermitian", lambda L, a: tuple(L.linalg.ldl_factor_ex(
        a + a.mT.conj(), hermitian=True)), (_cplx((2, 3, 3), 102),), grad=False),
    Case("ldl_solve", lambda L, a, b: L.linalg.ldl_solve(*L.linalg.ldl_factor(a + a.mT), b),
         (_mat(3, 3, 103), _mat(3, 2, 2)), grad=False),
    Case("solve_triangular", lambda L, a, b: L.linalg.solve_triangular(a.triu(), b, upper=True),
         (_sq(3, 70), _mat(3, 2, 71))),
    Case("solve_triangular_right_unit", lambda L, a, b: L.linalg.solve_triangular(
        a.tril(), b, upper=False, left=False, unitriangular=True), (_sq(3, 72), _mat(2, 3, 73))),
    Case("triangular_solve", lambda L, b, a: tuple(L.triangular_solve(b, a.triu())),
         (_mat(3, 2, 74), _sq(3, 75))),
    Case("triangular_solve_t", lambda L, b, a: L.triangular_solve(
        b, a.tril(), upper=False, transpose=True)[0], (_mat(3, 2, 76), _sq(3, 77))),
    Case("vector_norm", lambda L, x: L.linalg.vector_norm(x), (_mat(3, 4, 78),)),
    Case("vector_norm_ord", lambda L, x: tuple(L.linalg.vector_norm(x, o, dim=1) for o in
                                               (1, 3, float("inf"), -float("inf"), 0.5)),
         (_mat(3, 4, 79),)),
    Case("vector_norm_keepdim", lambda L, x: L.linalg.vector_norm(x, 2, (0, 2), True),
         (_rng(80).standard_normal((2, 3, 4)),)),
    Case("vector_norm_complex", lambda L, x: L.linalg.vector_norm(x, 1), (_cplx((4,), 81),)),
    Case("matrix_norm", lambda L, a: tuple(L.linalg.matrix_norm(a, o) for o in
                                           ("fro", "nuc", 1, -1, 2, -2, float("inf"))),
         (_mat(3, 4, 82),)),
    Case("norm", lambda L, a: (L.linalg.norm(a), L.linalg.norm(a, 1), L.linalg.norm(a, dim=1),
                              L.linalg.norm(a, "fro", (0, 1))), (_mat(3, 4, 83),)),
    Case("cond", lambda L, a: tuple(
        L.linalg.cond(a, p) if L is acg or p in (None, -2) else
        L.linalg.matrix_norm(a, p) * L.linalg.matrix_norm(L.linalg.inv(a), p)
        for p in (None, 1, "fro", -2)), (_sq(3, 84),)),
    # complex numbers
    Case("real_imag", lambda L, z: (z.real * 1, z.imag * 1, L.real(z), L.imag(z)),
         (_cplx((3,), 85),)),
    Case("conj_angle_abs", lambda L, z: (L.conj(z), L.angle(z), z.abs(), L.sgn(z)),
         (_cplx((4,), 86),)),
    Case("view_as_real", lambda L, z: L.view_as_real(z), (_cplx((2, 3), 87),)),
    Case("view_as_complex", lambda L, x: L.view_as_complex(x), (_mat(3, 2, 88),)),
    Case("complex_polar", lambda L, a, b: (L.complex(a, b), L.polar(a.abs() + 0.1, b)),
         (_mat(2, 3, 89), _mat(2, 3, 90))),
    Case("complex_arithmetic", lambda L, z, w: (z * w, z / w, (z * w).abs(), 2.0 * z / w.abs()),
         (_cplx((3,), 94), _cplx((3,), 95))),
    Case("angle_real", lambda L, x: L.angle(x), (np.array([-1.5, 0.0, 2.0]),), grad=False),
]


def _outputs(out: Any) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _run(lib: Any, case: Case, grad: bool) -> tuple:
    leaves = [lib.tensor(a, dtype=lib.complex128 if a.dtype.kind == "c" else lib.float64,
                         requires_grad=grad and case.grad) for a in case.inputs]
    with warnings.catch_warnings():
        if lib is torch:  # torch's deprecation notes for the old spellings (cholesky, lu_solve)
            warnings.simplefilter("ignore", UserWarning)
        outs = _outputs(case.call(lib, *leaves))
    return leaves, outs


def _np(t: Any) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().detach().numpy()
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


def _loss(lib: Any, outs: list) -> Any:
    """A weighted sum of the differentiable outputs (weights fixed by position and shape)."""
    total = 0
    for i, o in enumerate(outs):
        if not (o.dtype.is_floating_point or o.dtype.is_complex) if lib is torch else \
                o.dtype.kind not in "fc":
            continue
        w = _rng(1000 + i).standard_normal(tuple(o.shape))
        parts = (o.real, o.imag) if (o.is_complex() if lib is torch else o.dtype.kind == "c") \
            else (o,)
        for k, p in enumerate(parts):
            total = total + (p * lib.tensor(w * (k + 1), dtype=lib.float64)).sum()
    return total


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_values_and_grads_match_torch(case: Case) -> None:
    ours, outs = _run(acg, case, True)
    theirs, touts = _run(torch, case, True)
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts):
        assert tuple(o.shape) == tuple(t.shape), case.name
        np.testing.assert_allclose(_np(o), _np(t), rtol=1e-7, atol=1e-9, err_msg=case.name)
    if not case.grad:
        return
    _loss(acg, outs).backward()
    _loss(torch, touts).backward()
    for a, b in zip(ours, theirs):
        if b.grad is None:
            assert a.grad is None or not np.any(_np(a.grad))
            continue
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-6, atol=1e-8,
                                   err_msg=case.name)


_MODE_CASES = [c for c in CASES if c.name in ("det", "solve", "cholesky", "eigh", "svd", "lu",
                                                 "matrix_norm", "complex_polar")]


@pytest.mark.parametrize("case", _MODE_CASES, ids=[c.name for c in _MODE_CASES])
def test_grads_in_every_mode(case: Case, mode) -> None:
    ours, outs = _run(acg, case, True)
    theirs, touts = _run(torch, case, True)
    with mode():
        _loss(acg, outs).backward()
    _loss(torch, touts).backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-6, atol=1e-8)


def test_double_backward_of_inverse_and_det() -> None:
    a0 = _sq(3, 91)
    grads = []
    for lib in (acg, torch):
        a = lib.tensor(a0, requires_grad=True)
        g, = lib.autograd.grad(lib.linalg.det(a) + lib.linalg.inv(a).sum(), a,
                               create_graph=True)
        (g * g).sum().backward()
        grads.append(_np(a.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-7)


def test_compiled_function_of_linalg_ops() -> None:
    a0, b0 = _spd(3, 92), _mat(3, 2, 93)
    results = []
    for lib, wrap in ((acg, acg.compile), (torch, lambda f: f)):
        a, b = lib.tensor(a0, requires_grad=True), lib.tensor(b0, requires_grad=True)

        def f(a, b, L=lib):
            x = L.linalg.solve(a, b)
            return L.linalg.slogdet(a)[1] + L.linalg.cholesky(a).sum() + x.pow(2).sum()
        loss = wrap(f)(a, b)
        loss.backward()
        results.append((loss.item(), _np(a.grad), _np(b.grad)))
    for x, y in zip(*results):
        np.testing.assert_allclose(x, y, rtol=1e-8)


ERRORS = [
    ("inv_singular", lambda L: L.linalg.inv(L.tensor([[1.0, 2.0], [2.0, 4.0]]))),
    ("inv_nonsquare", lambda L: L.linalg.inv(L.ones(2, 3))),
    ("inv_1d", lambda L: L.linalg.inv(L.ones(3))),
    ("inv_int", lambda L: L.linalg.inv(L.ones(2, 2, dtype=L.int64))),
    ("det_nonsquare", lambda L: L.linalg.det(L.ones(2, 3))),
    ("solve_singular", lambda L: L.linalg.solve(L.zeros(2, 2), L.ones(2))),
    ("cholesky_not_pd", lambda L: L.linalg.cholesky(L.tensor([[1.0, 2.0], [2.0, 1.0]]))),
    ("inv_ex_check", lambda L: L.linalg.inv_ex(L.zeros(2, 2), check_errors=True)),
    ("qr_mode", lambda L: L.linalg.qr(L.ones(2, 2), mode="bad")),
    ("eigh_uplo", lambda L: L.linalg.eigh(L.eye(2), UPLO="X")),
    ("cross_len", lambda L: L.linalg.cross(L.ones(2, 4), L.ones(2, 4))),
    ("multi_dot_one", lambda L: L.linalg.multi_dot([L.ones(2, 2)])),
    ("lstsq_driver", lambda L: L.linalg.lstsq(L.ones(3, 2), L.ones(3, 1), driver="bad")),
    ("matrix_norm_ord", lambda L: L.linalg.matrix_norm(L.ones(2, 2), "bad")),
    ("vector_norm_int", lambda L: L.linalg.vector_norm(L.ones(3, dtype=L.int64))),
    ("fft_norm", lambda L: L.fft.fft(L.ones(4), norm="bad")),
    ("ldl_nonsquare", lambda L: L.linalg.ldl_factor_ex(L.ones(2, 3))),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_have_torchs_class(name: str, call: Callable) -> None:
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(Exception) as got:
        call(acg)
    names = {c.__name__ for c in type(got.value).__mro__}
    assert type(want.value).__name__.lstrip("_") in names, (name, got.value, want.value)
    text = str(want.value).split("\n")[0]
    assert text.split(": ", 1)[-1][:50] in str(got.value), (got.value, want.value)


OUT_CALLS = [
    ("linalg.inv", lambda L, o: L.linalg.inv(L.tensor(_sq(3, 96)), out=o), lambda L: L.empty(0,
                                                                                        dtype=L.float64)),
    ("linalg.slogdet", lambda L, o: L.linalg.slogdet(L.tensor(_sq(3, 97)), out=o),
     lambda L: (L.empty(0, dtype=L.float64), L.empty(0, dtype=L.float64))),
    ("fft.rfft", lambda L, o: L.fft.rfft(L.tensor(_mat(2, 6, 98)), out=o),
     lambda L: L.empty(0, dtype=L.complex128)),
    ("special.gammaln", lambda L, o: L.special.gammaln(L.tensor(_rng(99).random(3)), out=o),
     lambda L: L.empty(3, dtype=L.float64)),
    ("inverse", lambda L, o: L.inverse(L.tensor(_sq(2, 100)), out=o),
     lambda L: L.empty(2, 2, dtype=L.float64)),
]


@pytest.mark.parametrize("name,call,make", OUT_CALLS, ids=[c[0] for c in OUT_CALLS])
def test_out_argument_writes_into_the_given_tensor(name, call, make) -> None:
    got, want = [], []
    for lib, store in ((acg, got), (torch, want)):
        out = make(lib)
        r = call(lib, out)
        store.append((r, out))
    (r, out), (tr, tout) = got[0], want[0]
    if isinstance(out, tuple):
        assert all(a is b for a, b in zip(r, out))
    else:
        assert r is out
    for a, b in zip(_outputs(out), _outputs(tout)):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-10)


def test_out_argument_errors_as_torch() -> None:
    for lib in (acg, torch):
        a = lib.eye(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            lib.linalg.inv(a, out=lib.empty(0))
        with pytest.raises(RuntimeError):
            lib.fft.fft(lib.ones(4), out=lib.empty(0))


def test_ldl_under_compile_and_a_singular_d() -> None:
    a, b = acg.tensor(_spd(3, 104)), acg.tensor(_mat(3, 2, 105))
    f = acg.compile(lambda a, b: acg.linalg.ldl_solve(*acg.linalg.ldl_factor(a), b))
    np.testing.assert_allclose(f(a, b).detach().numpy(), np.linalg.solve(_spd(3, 104), _mat(3, 2, 105)),
                               rtol=1e-10)
    with pytest.raises(acg.linalg.LinAlgError, match="D is singular"):
        acg.linalg.ldl_factor(acg.zeros(2, 2))
    assert acg.linalg.ldl_factor_ex(acg.zeros(2, 2)).info.item() == 1  # as torch: info, no raise
