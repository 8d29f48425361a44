"""Gradients of cholesky_solve (w.r.t. the factor), einsum with a repeated subscript in one
operand (a diagonal), and grid_sample w.r.t. the grid at pixel-aligned points.

Each is checked against PyTorch (skipped without it) and against an oracle that does not
use PyTorch: ``jax.grad`` of a jnp reference, or central finite differences in float64
away from kinks; every backward runs in the three execution modes (``mode`` fixture).
"""
from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograd_compile as acg
import autograd_compile.nn.functional as AF

jax.config.update("jax_enable_x64", True)


def _torch() -> Any:
    return pytest.importorskip("torch")


def _grads(lib: Any, fn: Callable, arrays: list[np.ndarray], mode: Any = None,
           seed: int = 0) -> tuple[np.ndarray, list[np.ndarray]]:
    """fn(lib, *tensors) and the gradients of a fixed random projection of it."""
    ts = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *ts)
    w = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    loss = (out * lib.tensor(w.astype(arrays[0].real.dtype))).sum()
    if mode is None:
        loss.backward()
    else:
        with mode():
            loss.backward()
    return out.detach().numpy(), [t.grad.numpy() for t in ts]


def _numeric(f: Callable[[list[np.ndarray]], float], arrays: list[np.ndarray],
             eps: float = 1e-6) -> list[np.ndarray]:
    """Central differences of a float64 scalar function of real arrays."""
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            hi = [x.copy() for x in arrays]
            lo = [x.copy() for x in arrays]
            hi[k][idx] += eps
            lo[k][idx] -= eps
            g[idx] = (f(hi) - f(lo)) / (2 * eps)
        grads.append(g)
    return grads


def _close(a: Any, b: Any, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


# -- cholesky_solve --------------------------------------------------------------------------
def _factor(n: int, batch: tuple, seed: int, upper: bool, dtype: Any = np.float64) -> np.ndarray:
    rng = np.random.default_rng(seed)
    m = rng.standard_normal(batch + (n, n))
    if np.issubdtype(dtype, np.complexfloating):
        m = m + 1j * rng.standard_normal(batch + (n, n))
    tri = np.tril(m, -1) + np.eye(n) * (2 + np.abs(np.diagonal(m, 0, -2, -1)))[..., None, :]
    tri = tri.astype(dtype)
    return np.conj(np.swapaxes(tri, -1, -2)) if upper else tri


def _chol_solve_ref(b: jax.Array, f: jax.Array, upper: bool) -> jax.Array:
    """X = (L L^H)^-1 B with L taken as a general matrix (both triangles count)."""
    lower = jnp.conj(jnp.swapaxes(f, -1, -2)) if upper else f
    return jnp.linalg.solve(lower @ jnp.conj(jnp.swapaxes(lower, -1, -2)), b)


CHOL_CASES = [((), (), False), ((), (), True), ((2,), (2,), False), ((3,), (), True),
              ((), (2,), False), ((2, 1), (3,), True)]


@pytest.mark.parametrize("bb,fb,upper", CHOL_CASES)
def test_cholesky_solve_factor_grad(mode: Any, bb: tuple, fb: tuple, upper: bool) -> None:
    b = np.random.default_rng(1).standard_normal(bb + (3, 2))
    f = _factor(3, fb, 2, upper)
    fn = lambda L, x, y: L.cholesky_solve(x, y, upper)  # noqa: E731
    out, grads = _grads(acg, fn, [b, f], mode)
    w = np.random.default_rng(0).standard_normal(out.shape)
    ref = jax.grad(lambda x, y: jnp.sum(_chol_solve_ref(x, y, upper) * w), (0, 1))(b, f)
    _close(out, _chol_solve_ref(b, f, upper), 1e-9)
    for got, want in zip(grads, ref):
        _close(got, want, 1e-8)
    assert np.abs(np.triu(grads[1], 1) if not upper else np.tril(grads[1], -1)).max() > 1e-3
    torch = _torch()
    t_out, t_grads = _grads(torch, fn, [b, f])
    _close(out, t_out, 1e-9)
    for got, want in zip(grads, t_grads):
        _close(got, want, 1e-8)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_complex_factor_grad(mode: Any, upper: bool) -> None:
    rng = np.random.default_rng(3)
    b = rng.standard_normal((2, 3, 2)) + 1j * rng.standard_normal((2, 3, 2))
    f = _factor(3, (2,), 4, upper, np.complex128)

    def fn(L: Any, x: Any, y: Any) -> Any:
        return L.view_as_real(L.cholesky_solve(x, y, upper))
    out, grads = _grads(acg, fn, [b, f], mode)
    torch = _torch()
    t_out, t_grads = _grads(torch, fn, [b, f])
    _close(out, t_out, 1e-9)
    for got, want in zip(grads, t_grads):
        _close(got, want, 1e-8)


def test_cholesky_solve_numeric_and_errors() -> None:
    b = np.random.default_rng(5).standard_normal((3, 2))
    f = _factor(3, (), 6, False)
    w = np.random.default_rng(0).standard_normal((3, 2))
    num = _numeric(lambda a: float(np.sum(np.linalg.solve(a[1] @ a[1].T, a[0]) * w)), [b, f])
    _, grads = _grads(acg, lambda L, x, y: L.cholesky_solve(x, y), [b, f])
    for got, want in zip(grads, num):
        _close(got, want, 1e-6)
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes"):
        acg.cholesky_solve(acg.ones(4, 2, dtype=acg.float64), acg.tensor(f))
    with pytest.raises(RuntimeError, match="same dtype"):
        acg.cholesky_solve(acg.ones(3, 2), acg.tensor(f))


def test_wishart_scale_tril_log_prob_grad(mode: Any) -> None:
    torch = _torch()
    f = _factor(3, (), 7, False) * 0.7
    x = np.random.default_rng(8).standard_normal((3, 5))
    value = x @ x.T + np.eye(3)
    grads = []
    for lib, m in ((acg, mode), (torch, None)):
        tril = lib.tensor(f, requires_grad=True)
        dist = lib.distributions.Wishart(df=lib.tensor(5.0, dtype=lib.float64), scale_tril=tril)
        loss = dist.log_prob(lib.tensor(value))
        if m is None:
            loss.backward()
        else:
            with m():
                loss.backward()
        grads.append(tril.grad.numpy())
    _close(grads[0], grads[1], 1e-8)


# -- einsum with a diagonal --------------------------------------------------------------------
EINSUM_CASES = [
    ("ii->", [(3, 3)]), ("ii->i", [(3, 3)]), ("ii", [(4, 4)]), ("bii->b", [(2, 3, 3)]),
    ("iij->j", [(3, 3, 2)]), ("iji->j", [(3, 2, 3)]), ("iii->i", [(3, 3, 3)]),
    ("iii->", [(2, 2, 2)]), ("iijj->ij", [(2, 2, 3, 3)]), ("...ii->...i", [(2, 3, 3)]),
    ("...ii->...", [(2, 1, 3, 3)]), ("ii...->...", [(3, 3, 2)]), ("ii,i->i", [(3, 3), (3,)]),
    ("ij,kk->ij", [(2, 3), (4, 4)]), ("bii,bij->bj", [(2, 3, 3), (2, 3, 4)]),
    ("...ii,...i->...", [(2, 3, 3), (1, 3)]), ("ii,jj->ij", [(3, 3), (2, 2)]),
    ("iik,kj->ij", [(3, 3, 2), (2, 4)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM_CASES, ids=[c[0] for c in EINSUM_CASES])
def test_einsum_repeated_subscript(mode: Any, eq: str, shapes: list) -> None:
    rng = np.random.default_rng(len(eq))
    arrays = [rng.standard_normal(s) for s in shapes]
    fn = lambda L, *ts: L.einsum(eq, *ts)  # noqa: E731
    out, grads = _grads(acg, fn, arrays, mode)
    w = np.random.default_rng(0).standard_normal(out.shape)
    ref = jax.grad(lambda *a: jnp.sum(jnp.einsum(eq, *a) * w), tuple(range(len(arrays))))(*arrays)
    _close(out, jnp.einsum(eq, *arrays), 1e-10)
    for got, want in zip(grads, ref):
        _close(got, want, 1e-10)
    torch = _torch()
    t_out, t_grads = _grads(torch, fn, arrays)
    _close(out, t_out, 1e-10)
    for got, want in zip(grads, t_grads):
        _close(got, want, 1e-10)


def test_einsum_diagonal_complex_and_double_backward() -> None:
    rng = np.random.default_rng(9)
    a = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    fn = lambda L, x: L.view_as_real(L.einsum("ii->i", x * x))  # noqa: E731
    _, grads = _grads(acg, fn, [a])
    torch = _torch()
    _, t_grads = _grads(torch, fn, [a])
    _close(grads[0], t_grads[0], 1e-10)
    x = acg.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    (g,) = acg.autograd.grad(acg.einsum("ii->", x * x), x, create_graph=True)
    (gg,) = acg.autograd.grad(g.sum(), x)
    _close(gg.numpy(), 2 * np.eye(3), 1e-12)


# -- grid_sample -------------------------------------------------------------------------------
PADDINGS = ["zeros", "border", "reflection"]


def _sample_grads(lib: Any, x: np.ndarray, grid: np.ndarray, gs_mode: str, padding: str,
                  align: bool, run_mode: Any = None) -> list[np.ndarray]:
    F = lib.nn.functional
    xt = lib.tensor(x, requires_grad=True)
    gt = lib.tensor(grid, requires_grad=True)
    y = F.grid_sample(xt, gt, mode=gs_mode, padding_mode=padding, align_corners=align)
    loss = (y * y).sum()
    if run_mode is None:
        loss.backward()
    else:
        with run_mode():
            loss.backward()
    return [y.detach().numpy(), xt.grad.numpy(), gt.grad.numpy()]


def _aligned_grid(spatial: tuple, align: bool, dtype: Any) -> np.ndarray:
    """Every pixel centre, plus the border points, in grid_sample's normalised (x, y[, z])."""
    axes = []
    for n in spatial:
        centres = (2 * np.arange(n) + 1) / n - 1 if not align else np.linspace(-1, 1, n)
        axes.append(np.concatenate([centres, [-1.0, 1.0]]))
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.stack(mesh[::-1], -1)[None].astype(dtype)


def _random_grid(out: tuple, n: int, seed: int, dtype: Any) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.4, 1.4, (1,) + out + (n,)).astype(dtype)


GS_CASES = [(p, a, m) for p in PADDINGS for a in (True, False)
            for m in ("bilinear", "nearest", "bicubic")]


@pytest.mark.parametrize("padding,align,gs_mode", GS_CASES)
@pytest.mark.parametrize("kind", ["aligned", "random"])
def test_grid_sample_2d_grads_match_torch(mode: Any, padding: str, align: bool,
                                          gs_mode: str, kind: str) -> None:
    torch = _torch()
    x = np.random.default_rng(11).standard_normal((1, 2, 4, 5)).astype(np.float32)
    grid = _aligned_grid((4, 5), align, np.float32) if kind == "aligned" else \
        _random_grid((3, 6), 2, 12, np.float32)
    got = _sample_grads(acg, x, grid, gs_mode, padding, align, mode)
    want = _sample_grads(torch, x, grid, gs_mode, padding, align)
    for g, w in zip(got, want):
        _close(g, w, 2e-4)


@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align", [True, False])
@pytest.mark.parametrize("kind", ["aligned", "random"])
def test_grid_sample_3d_grads_match_torch(mode: Any, padding: str, align: bool,
                                          kind: str) -> None:
    torch = _torch()
    x = np.random.default_rng(13).standard_normal((1, 2, 3, 4, 2)).astype(np.float32)
    grid = _aligned_grid((3, 4, 2), align, np.float32) if kind == "aligned" else \
        _random_grid((2, 3, 2), 3, 14, np.float32)
    for gs_mode in ("bilinear", "nearest"):
        got = _sample_grads(acg, x, grid, gs_mode, padding, align, mode)
        want = _sample_grads(torch, x, grid, gs_mode, padding, align)
        for g, w in zip(got, want):
            _close(g, w, 2e-4)


@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("align", [True, False])
def test_stn_identity_theta_grad(mode: Any, padding: str, align: bool) -> None:
    """The repro: an identity affine_grid puts points on the border and on pixel centres."""
    torch = _torch()
    x = np.random.RandomState(0).randn(1, 1, 4, 5).astype(np.float32)
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
    grads = []
    for lib, m in ((acg, mode), (torch, None)):
        F = lib.nn.functional
        th = lib.tensor(theta, requires_grad=True)
        grid = F.affine_grid(th, [1, 1, 4, 5], align_corners=align)
        y = F.grid_sample(lib.tensor(x), grid, padding_mode=padding, align_corners=align)
        if m is None:
            (y * y).sum().backward()
        else:
            with m():
                (y * y).sum().backward()
        grads.append(th.grad.numpy())
    _close(grads[0], grads[1], 1e-4)
    if align and padding == "border":
        _close(grads[0].ravel(), [6.2921, -15.028, -19.7704, 1.0761, 2.3957, 2.6003], 1e-3)


@pytest.mark.parametrize("size", [2, 3, 4, 7, 10, 17, 33])
@pytest.mark.parametrize("align", [True, False])
def test_affine_grid_identity_bits_match_torch(size: int, align: bool) -> None:
    torch = _torch()
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], np.float32)
    ours = AF.affine_grid(acg.tensor(theta), [1, 1, size, size + 1], align_corners=align)
    theirs = torch.nn.functional.affine_grid(torch.tensor(theta), [1, 1, size, size + 1],
                                             align_corners=align)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def _bilinear_border_ref(x: np.ndarray, grid: np.ndarray, align: bool) -> float:
    """sum(grid_sample(x, grid, padding_mode='border')**2) in numpy, float64 (4-D)."""
    h, w = x.shape[2:]
    gx, gy = grid[0, ..., 0], grid[0, ..., 1]
    total = 0.0
    for coord_x, coord_y in zip(gx.ravel(), gy.ravel()):
        px = (coord_x + 1) / 2 * (w - 1) if align else ((coord_x + 1) * w - 1) / 2
        py = (coord_y + 1) / 2 * (h - 1) if align else ((coord_y + 1) * h - 1) / 2
        px, py = np.clip(px, 0, w - 1), np.clip(py, 0, h - 1)
        x0, y0 = int(np.floor(px)), int(np.floor(py))
        fx, fy = px - x0, py - y0
        val = np.zeros(x.shape[1])
        for dy, wy in ((0, 1 - fy), (1, fy)):
            for dx, wx in ((0, 1 - fx), (1, fx)):
                val += wy * wx * x[0, :, min(y0 + dy, h - 1), min(x0 + dx, w - 1)]
        total += float(np.sum(val ** 2))
    return total


@pytest.mark.parametrize("align", [True, False])
def test_grid_sample_border_grid_grad_numeric(mode: Any, align: bool) -> None:
    """Central differences of a numpy reference, at points inside and outside the image
    (outside, the clip makes the gradient 0), none of them on a kink."""
    x = np.random.default_rng(15).standard_normal((1, 2, 4, 5))
    inner = np.random.default_rng(16).uniform(-0.9, 0.9, (1, 2, 3, 2))
    outside = np.array([[[[1.3, 0.2], [-1.2, -0.4], [0.3, 1.25]]]])
    grid = np.concatenate([inner, outside], 1)
    _, _, g = _sample_grads(acg, x, grid, "bilinear", "border", align, mode)
    num = _numeric(lambda a: _bilinear_border_ref(x, a[0], align), [grid])[0]
    _close(g, num, 1e-5)
