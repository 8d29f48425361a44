"""acg.fft and acg.special against PyTorch: every name run through both libraries in float64
(complex128 where the transform takes complex input), values compared, then gradients of a
weighted sum of the outputs (the same harness as test_linalg); PyTorch's errors; the Bessel and
polynomial functions have no gradient in PyTorch and are compared by value.
"""
from __future__ import annotations

import numpy as np
import pytest

import autograd_compile as acg
from test_linalg import Case, _loss, _np, _run, _rng

torch = pytest.importorskip("torch")


def _x(shape: tuple, seed: int = 0, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return _rng(seed).uniform(lo, hi, shape)


def _z(shape: tuple, seed: int = 0) -> np.ndarray:
    r = _rng(seed)
    return r.standard_normal(shape) + 1j * r.standard_normal(shape)


FFT_CASES = [
    Case("fft_real", lambda L, x: L.fft.fft(x), (_x((2, 5), 1),)),
    Case("fft_n_dim_norms", lambda L, z: tuple(L.fft.fft(z, 6, 0, n) for n in
                                               ("backward", "forward", "ortho")),
         (_z((4, 3), 2),)),
    Case("ifft", lambda L, z: L.fft.ifft(z, n=3), (_z((5,), 3),)),
    Case("rfft_irfft", lambda L, x: (L.fft.rfft(x), L.fft.irfft(L.fft.rfft(x), n=7)),
         (_x((3, 7), 4),)),
    Case("irfft", lambda L, z: L.fft.irfft(z, norm="ortho"), (_z((2, 4), 5),)),
    Case("hfft_ihfft", lambda L, z: L.fft.hfft(z, n=6), (_z((4,), 6),)),
    Case("ihfft", lambda L, x: L.fft.ihfft(x, norm="forward"), (_x((2, 6), 7),)),
    Case("fft2_ifft2", lambda L, z: (L.fft.fft2(z), L.fft.ifft2(z, s=(2, 5))), (_z((2, 3, 4), 8),)),
    Case("rfft2_irfft2", lambda L, x: L.fft.irfft2(L.fft.rfft2(x), s=(4, 6)), (_x((4, 6), 9),)),
    Case("hfft2_ihfft2", lambda L, x: (L.fft.ihfft2(x), L.fft.hfft2(L.fft.ihfft2(x), s=(3, 4))),
         (_x((3, 4), 10),)),
    Case("fftn_ifftn", lambda L, z: (L.fft.fftn(z), L.fft.ifftn(z, dim=(0, 2), norm="ortho")),
         (_z((2, 3, 4), 11),)),
    Case("fftn_s_only", lambda L, z: L.fft.fftn(z, s=(3, 3)), (_z((2, 4, 4), 12),)),
    Case("rfftn_irfftn", lambda L, x: (L.fft.rfftn(x), L.fft.irfftn(L.fft.rfftn(x), s=x.shape)),
         (_x((2, 3, 4), 13),)),
    Case("hfftn_ihfftn", lambda L, x: (L.fft.ihfftn(x), L.fft.hfftn(L.fft.ihfftn(x), s=(2, 4))),
         (_x((2, 4), 14),)),
    Case("shift", lambda L, x: (L.fft.fftshift(x), L.fft.ifftshift(x, dim=1),
                                L.fft.fftshift(x, dim=(0,))), (_x((3, 5), 15),)),
    Case("freq", lambda L: (L.fft.fftfreq(5), L.fft.fftfreq(6, d=0.5, dtype=L.float64),
                            L.fft.rfftfreq(7, 2.0, dtype=L.float64)), (), grad=False),
]

_POS = _x((5,), 20, 0.2, 3.0)
_UNIT = _x((5,), 21, 0.05, 0.95)
_SIGNED = _x((5,), 22, -0.9, 0.9)


def _special(name: str, x: np.ndarray, grad: bool = True) -> Case:
    return Case(f"special_{name}", lambda L, t: getattr(L.special, name)(t), (x,), grad)


SPECIAL_CASES = [
    *[_special(n, x) for n, x in (
        ("erf", _SIGNED), ("erfc", _SIGNED), ("erfcx", _POS), ("erfinv", _SIGNED),
        ("expit", _SIGNED * 3), ("exp2", _SIGNED), ("expm1", _SIGNED), ("log1p", _POS),
        ("gammaln", _POS), ("digamma", _POS), ("psi", _POS), ("i0", _SIGNED * 3),
        ("i0e", _SIGNED * 3), ("i1", _SIGNED * 3), ("i1e", _SIGNED * 3), ("ndtr", _SIGNED * 2),
        ("ndtri", _UNIT), ("log_ndtr", _SIGNED * 4), ("sinc", _SIGNED * 3), ("entr", _POS))],
    *[_special(n, x, grad=False) for n, x in (
        ("spherical_bessel_j0", _SIGNED * 10), ("bessel_j0", _SIGNED * 10),
        ("bessel_j1", _SIGNED * 10), ("bessel_y0", _POS * 5), ("bessel_y1", _POS * 5),
        ("modified_bessel_i0", _SIGNED * 5), ("modified_bessel_i1", _SIGNED * 5),
        ("modified_bessel_k0", _POS * 3), ("modified_bessel_k1", _POS * 3),
        ("scaled_modified_bessel_k0", _POS * 3), ("scaled_modified_bessel_k1", _POS * 3),
        ("airy_ai", _SIGNED * 6))],
    Case("special_entr_edges", lambda L, x: L.special.entr(x), (np.array([-1.0, 0.0, 0.5]),),
         grad=False),
    Case("special_xlogy", lambda L, x, y: L.special.xlogy(x, y), (_x((3,), 23), _POS[:3])),
    Case("special_xlogy_zero", lambda L, y: L.special.xlogy(0.0, y), (_POS[:3],)),
    Case("special_xlog1py", lambda L, x, y: L.special.xlog1py(x, y), (_x((3,), 24), _POS[:3])),
    Case("special_zeta", lambda L, x, q: L.special.zeta(x, q), (_POS + 1.2, _POS), grad=False),
    Case("special_gammainc", lambda L, a, x: (L.special.gammainc(a.detach(), x),
                                             L.special.gammaincc(a.detach(), x)),
         (_POS, _POS[::-1].copy())),  # no gradient for a in PyTorch
    Case("special_polygamma", lambda L, x: tuple(L.special.polygamma(n, x) for n in (0, 1, 3)),
         (_POS,)),
    Case("special_multigammaln", lambda L, x: L.special.multigammaln(x, 3), (_POS + 1.5,)),
    Case("special_logit", lambda L, p: (L.special.logit(p), L.special.logit(p, eps=0.2)),
         (_UNIT,)),
    Case("special_round", lambda L, x: L.special.round(x * 10, decimals=1), (_SIGNED,)),
    Case("special_softmax", lambda L, x: (L.special.softmax(x, 1), L.special.log_softmax(x, 0),
                                          L.special.logsumexp(x, 1)), (_x((2, 3), 25),)),
    Case("top_level_special", lambda L, x: (L.lgamma(x), L.digamma(x), L.polygamma(2, x),
                                            L.erfinv(x / 4), L.erfc(x), L.i0(x), L.sinc(x),
                                            L.exp2(x), L.xlogy(x, x), L.logit(x / 4),
                                            L.mvlgamma(x + 1, 2)), (_POS[:3],)),
    # PyTorch has no gradient for igamma's first argument
    Case("top_level_igamma", lambda L, x: (L.igamma(x.detach() + 1, x),
                                           L.igammac(x.detach() + 1, x)), (_POS[:3],)),
    Case("special_polynomials", lambda L, x, n: tuple(
        getattr(L.special, p)(x, n) for p in acg.kernels.fft_special.POLYNOMIALS),
         (_SIGNED, np.array([0, 1, 2, 5, 7])), grad=False),
    Case("special_polynomial_scalar_n", lambda L, x: L.special.chebyshev_polynomial_t(x, 4),
         (_SIGNED,), grad=False),
]
CASES = FFT_CASES + SPECIAL_CASES


def _run_int(lib, case):
    """Like _run, but integer numpy inputs become int64 tensors."""
    leaves = [lib.tensor(a) if a.dtype.kind == "i" else
              lib.tensor(a, dtype=lib.complex128 if a.dtype.kind == "c" else lib.float64,
                         requires_grad=case.grad) for a in case.inputs]
    out = case.call(lib, *leaves)
    return leaves, list(out) if isinstance(out, tuple) else [out]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_values_and_grads_match_torch(case: Case) -> None:
    runner = _run_int if any(a.dtype.kind == "i" for a in case.inputs) else \
        (lambda lib, c: _run(lib, c, True))
    ours, outs = runner(acg, case)
    theirs, touts = runner(torch, case)
    assert len(outs) == len(touts)
    for o, t in zip(outs, touts):
        assert tuple(o.shape) == tuple(t.shape), case.name
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], case.name
        tol = 1e-6 if "bessel" in case.name else 1e-9  # torch's Cephes Bessel: ~2e-7 off
        np.testing.assert_allclose(_np(o), _np(t), rtol=1e-7, atol=tol, err_msg=case.name)
    if not case.grad:
        return
    _loss(acg, outs).backward()
    _loss(torch, touts).backward()
    for a, b in zip(ours, theirs):
        if b.grad is None:
            assert a.grad is None, case.name
            continue
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-6, atol=1e-8,
                                   err_msg=case.name)


_MODE_CASES = [c for c in CASES if c.name in ("fft_n_dim_norms", "rfft_irfft", "special_erfinv",
                                                 "special_gammainc")]


@pytest.mark.parametrize("case", _MODE_CASES, ids=[c.name for c in _MODE_CASES])
def test_grads_in_every_mode(case: Case, mode) -> None:
    ours, outs = _run(acg, case, True)
    theirs, touts = _run(torch, case, True)
    with mode():
        _loss(acg, outs).backward()
    _loss(torch, touts).backward()
    for a, b in zip(ours, theirs):
        if b.grad is None:
            assert a.grad is None
            continue
        np.testing.assert_allclose(_np(a.grad), _np(b.grad), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name,ref,x", [
    ("bessel_j0", lambda m, v: m.besselj(0, v), _SIGNED * 10),
    ("bessel_j1", lambda m, v: m.besselj(1, v), _SIGNED * 10),
    ("bessel_y0", lambda m, v: m.bessely(0, v), _POS * 5),
    ("bessel_y1", lambda m, v: m.bessely(1, v), _POS * 5),
    ("modified_bessel_k0", lambda m, v: m.besselk(0, v), _POS * 3),
    ("modified_bessel_k1", lambda m, v: m.besselk(1, v), _POS * 3),
    ("scaled_modified_bessel_k1", lambda m, v: m.exp(v) * m.besselk(1, v), _POS * 3),
    ("airy_ai", lambda m, v: m.airyai(v), _SIGNED * 6),
])
def test_bessel_functions_against_mpmath(name, ref, x) -> None:
    mpmath = pytest.importorskip("mpmath")
    got = getattr(acg.special, name)(acg.tensor(x)).detach().numpy()
    want = np.array([float(ref(mpmath, float(v))) for v in x])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_float32_and_integer_inputs_follow_torchs_dtypes() -> None:
    for lib in (acg, torch):
        assert str(lib.fft.fft(lib.ones(4)).dtype).endswith("complex64")
        assert str(lib.fft.rfft(lib.ones(4, dtype=lib.float64)).dtype).endswith("complex128")
        assert str(lib.special.gammaln(lib.arange(1, 4)).dtype).endswith("float32")
        assert str(lib.special.erfc(lib.ones(2)).dtype).endswith("float32")


def test_double_backward_through_fft_and_special() -> None:
    x0 = _x((6,), 30, 0.2, 0.8)
    grads = []
    for lib in (acg, torch):
        x = lib.tensor(x0, requires_grad=True)
        y = lib.fft.rfft(lib.special.erfinv(x)).abs().sum() + lib.special.digamma(x + 1).sum()
        g, = lib.autograd.grad(y, x, create_graph=True)
        (g * g).sum().backward()
        grads.append(_np(x.grad))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-7)


ERRORS = [
    ("fft_norm", lambda L: L.fft.fft(L.ones(4), norm="bad")),
    ("fftn_s_dim", lambda L: L.fft.fftn(L.ones(4, 4), s=(2, 2), dim=(0,))),
    ("polygamma_neg", lambda L: L.special.polygamma(-1, L.ones(2))),
    ("multigammaln_p", lambda L: L.special.multigammaln(L.ones(2) * 3, 0)),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_have_torchs_class(name, call) -> None:
    with pytest.raises(Exception) as want:
        call(torch)
    with pytest.raises(Exception) as got:
        call(acg)
    names = {c.__name__ for c in type(got.value).__mro__}
    assert type(want.value).__name__.lstrip("_") in names, (name, got.value, want.value)
    text = str(want.value).split("\n")[0]
    assert text.split(": ", 1)[-1][:50] in str(got.value), (got.value, want.value)


def test_xlogy_gradient_at_zero_follows_pytorch():
    """d/dx xlogy(x, y) is 0 where x == 0 and y <= 0 (xlogy(0, y) is the constant 0 there;
    log(y) gave -inf), and d/dy = x / y, also through broadcasting and a double backward."""
    x = acg.tensor([0.0, 1.0, 0.0, 2.0], requires_grad=True)
    y = acg.tensor([0.0, 2.0, -1.0, 3.0], requires_grad=True)
    acg.xlogy(x, y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, np.log(2), 0.0, np.log(3)], rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy()[1:], [0.5, 0.0, 2 / 3], rtol=1e-6)
    assert np.isnan(y.grad.numpy()[0])  # 0 / 0, as torch
    a = acg.tensor([[0.0, 1.0]], requires_grad=True)
    b = acg.tensor([[2.0], [0.5], [1.0]], requires_grad=True)
    (acg.xlogy(a, b) * acg.arange(6.0).reshape(3, 2)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [[-np.log(4), -np.log(4)]], rtol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), [[0.5], [6.0], [5.0]], rtol=1e-6)
    u = acg.tensor([0.5, 1.0], requires_grad=True)
    g, = acg.autograd.grad(acg.xlogy(u, acg.tensor([2.0, 3.0])).sum() * u.sum(), u,
                           create_graph=True)
    g.sum().backward()  # sum_j (log y_j T + S), T = sum u, S = sum u log y: sum log y + 2 log y_k
    np.testing.assert_allclose(u.grad.numpy(), [3 * np.log(2) + np.log(3),
                                                np.log(2) + 3 * np.log(3)], rtol=1e-6)
