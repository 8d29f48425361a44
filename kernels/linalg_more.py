"""``torch.linalg`` ops and complex-number ops, each a JAX function made an op by :func:`jaxop`
(gradients by ``jax.vjp``). The Python surface with PyTorch's signatures is
``autograd_compile/linalg``; the checks here raise PyTorch's errors on fake and real inputs.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autograd_compile._dtype import scalar_type_name

from ._bridge import jaxop
from ._dtypes import category

def matrix_check(op: str, name: str = "A", square: bool = True) -> Any:
    """A check: ``name`` is a float or complex batch of (square) matrices, in PyTorch's words."""
    def check(*args: Any, **kwargs: Any) -> None:
        a = args[0]
        if category(a.dtype) < 2:
            raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. "
                               f"Got {scalar_type_name(a.dtype)}")
        if a.ndim < 2:
            raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
        if square and a.shape[-1] != a.shape[-2]:
            raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are "
                               f"{a.shape[-2]} by {a.shape[-1]} matrices")
    return check


_SQ = matrix_check


def _info_from_diag(d: jax.Array) -> jax.Array:
    """LAPACK's info: the 1-based index of the first zero (or non-finite) diagonal entry, else 0."""
    bad = (d == 0) | ~jnp.isfinite(d)
    first = jnp.argmax(bad, axis=-1).astype(jnp.int32) + 1
    return jnp.where(bad.any(axis=-1), first, 0).astype(jnp.int32)


def _inv_ex(a: jax.Array) -> tuple:
    lu, _, _ = jax.lax.linalg.lu(a)
    return jnp.linalg.inv(a), _info_from_diag(jnp.diagonal(lu, axis1=-2, axis2=-1))


def _cholesky_ex(a: jax.Array, upper: bool = False) -> tuple:
    low = jnp.linalg.cholesky(_read_hermitian(a, "L"), symmetrize_input=False)
    info = _info_from_diag(jnp.diagonal(low, axis1=-2, axis2=-1))
    out = jnp.conj(jnp.swapaxes(low, -1, -2)) if upper else low
    return out, info


def _solve(a: jax.Array, b: jax.Array, left: bool = True) -> jax.Array:
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return jnp.swapaxes(_solve(jnp.swapaxes(a, -1, -2), jnp.swapaxes(b, -1, -2)), -1, -2)
    if vector:
        return jnp.linalg.solve(a, b[..., None])[..., 0]
    return jnp.linalg.solve(a, b)


def _solve_ex(a: jax.Array, b: jax.Array, left: bool = True) -> tuple:
    return _solve(a, b, left), _inv_ex(a)[1]


def _eigh(a: jax.Array, uplo: str = "L") -> tuple:
    w, v = jnp.linalg.eigh(_read_hermitian(a, uplo), symmetrize_input=False)
    return w, v


def _read_hermitian(a: jax.Array, uplo: str) -> jax.Array:
    """The value PyTorch reads (one triangle), with the gradient of the Hermitian part
    (PyTorch's gradients for cholesky/eigh are Hermitian)."""
    sym = (a + jnp.conj(jnp.swapaxes(a, -1, -2))) / 2
    return sym + jax.lax.stop_gradient(_hermitian(a, uplo) - sym)


def _hermitian(a: jax.Array, uplo: str) -> jax.Array:
    """The Hermitian matrix whose ``uplo`` triangle ``a`` holds (PyTorch reads only that one)."""
    tri = jnp.tril if uplo.upper() == "L" else jnp.triu
    k = -1 if uplo.upper() == "L" else 1
    diag = jnp.real(jnp.diagonal(a, axis1=-2, axis2=-1)).astype(a.dtype)
    strict = tri(a, k)
    return strict + jnp.conj(jnp.swapaxes(strict, -1, -2)) + diag[..., None] * jnp.eye(
        a.shape[-1], dtype=a.dtype)


def _svd(a: jax.Array, full_matrices: bool = True) -> tuple:
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    m, n = a.shape[-2:]
    if not full_matrices or m == n:
        return u, s, vh
    # the completing columns/rows carry no gradient (PyTorch narrows to the reduced factors)
    uf, _, vhf = jnp.linalg.svd(jax.lax.stop_gradient(a), full_matrices=True)
    k = min(m, n)
    return (jnp.concatenate([u, uf[..., :, k:]], -1),
            s, jnp.concatenate([vh, vhf[..., k:, :]], -2))


def _tolerance(s: jax.Array, shape: tuple, atol: Any, rtol: Any) -> jax.Array:
    """PyTorch's pinv/matrix_rank cutoff: max(atol, rtol * largest singular value)."""
    smax = jnp.max(s, axis=-1, keepdims=True) if s.shape[-1] else jnp.zeros(s.shape[:-1] + (1,))
    if rtol is None:
        eps = jnp.finfo(s.dtype).eps
        rtol = 0.0 if (atol is not None and atol > 0) else eps * max(shape[-2:])
    atol = 0.0 if atol is None else atol
    return jnp.maximum(atol, rtol * smax)


def _pinv(a: jax.Array, atol: Any = None, rtol: Any = None, hermitian: bool = False
          ) -> jax.Array:
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    cut = _tolerance(s, a.shape, atol, rtol)
    sinv = jnp.where(s > cut, 1 / jnp.where(s > cut, s, 1), 0).astype(u.dtype)
    return jnp.conj(jnp.swapaxes(vh, -1, -2)) @ (sinv[..., None] * jnp.conj(
        jnp.swapaxes(u, -1, -2)))


def _matrix_rank(a: jax.Array, atol: Any = None, rtol: Any = None, hermitian: bool = False
                 ) -> jax.Array:
    s = jnp.linalg.svd(a, compute_uv=False)
    return jnp.sum(s > _tolerance(s, a.shape, atol, rtol), axis=-1).astype(jnp.int64)


def _lstsq(a: jax.Array, b: jax.Array) -> jax.Array:
    vector = b.ndim == a.ndim - 1
    x = _pinv(a) @ (b[..., None] if vector else b)
    return x[..., 0] if vector else x


def _lu_factor_ex(a: jax.Array, pivot: bool = True) -> tuple:
    lu, piv, _ = jax.lax.linalg.lu(a)
    return lu, piv.astype(jnp.int32) + 1, _info_from_diag(jnp.diagonal(lu, axis1=-2, axis2=-1))


def _lu(a: jax.Array, pivot: bool = True) -> tuple:
    lu, _, perm = jax.lax.linalg.lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    low = jnp.tril(lu[..., :, :k], -1) + jnp.eye(m, k, dtype=a.dtype)
    up = jnp.triu(lu[..., :k, :])
    p = jnp.swapaxes(jax.nn.one_hot(perm, m, dtype=a.dtype), -1, -2)  # A = P L U
    return p, low, up


def _lu_solve(lu: jax.Array, pivots: jax.Array, b: jax.Array, left: bool = True,
              adjoint: bool = False) -> jax.Array:
    """Solve with an LU factorisation (PyTorch's 1-based LAPACK pivots)."""
    if not left:  # X A = B  <=>  A^H X^H = B^H
        bh = jnp.conj(jnp.swapaxes(b, -1, -2))
        return jnp.conj(jnp.swapaxes(_lu_solve(lu, pivots, bh, True, not adjoint), -1, -2))
    n = lu.shape[-1]
    perm = jax.lax.linalg.lu_pivots_to_permutation(pivots.astype(jnp.int32) - 1, n)
    batch = jnp.broadcast_shapes(lu.shape[:-2], b.shape[:-2])
    lu = jnp.broadcast_to(lu, batch + lu.shape[-2:])
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    perm = jnp.broadcast_to(perm, batch + perm.shape[-1:])
    tri = jax.lax.linalg.triangular_solve
    if not adjoint:  # A = P L U: x = U^-1 L^-1 P^T b
        pb = jnp.take_along_axis(b, perm[..., None], axis=-2)
        y = tri(lu, pb, left_side=True, lower=True, unit_diagonal=True)
        return tri(lu, y, left_side=True, lower=False)
    y = tri(lu, b, left_side=True, lower=False, transpose_a=True, conjugate_a=True)
    z = tri(lu, y, left_side=True, lower=True, unit_diagonal=True, transpose_a=True,
            conjugate_a=True)
    inv = jnp.argsort(perm, axis=-1)
    return jnp.take_along_axis(z, inv[..., None], axis=-2)


def _solve_triangular(a: jax.Array, b: jax.Array, upper: bool, left: bool = True,
                      unitriangular: bool = False) -> jax.Array:
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = jnp.broadcast_to(a, batch + a.shape[-2:])
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    return jax.lax.linalg.triangular_solve(a, b, left_side=left, lower=not upper,
                                           unit_diagonal=unitriangular)


def _ord(text: str) -> Any:
    """A norm order passed through the schema as text ('fro', 'nuc', 'inf', '2', ...)."""
    return text if text in ("fro", "nuc") else float(text)


def _vector_norm(x: jax.Array, ord: str = "2", dim: Any = None, keepdim: bool = False
                 ) -> jax.Array:
    o = _ord(ord)
    axis = None if dim is None or len(dim) == 0 else tuple(dim)
    # |x| with PyTorch's derivative sign(x): 0 at 0 (jnp.abs's is 1 there)
    a = jnp.abs(x) if jnp.iscomplexobj(x) else x * jnp.sign(x)
    if o == np.inf:
        return jnp.max(a, axis=axis, keepdims=keepdim)
    if o == -np.inf:
        return jnp.min(a, axis=axis, keepdims=keepdim)
    if o == 0:
        return jnp.sum(a != 0, axis=axis, keepdims=keepdim).astype(a.dtype)
    # a zero vector's gradient is 0 (PyTorch's subgradient), not nan: the root is masked there
    total = jnp.sum(a * a if o == 2 else a ** o, axis=axis, keepdims=keepdim)
    safe = jnp.where(total == 0, 1, total)
    return jnp.where(total == 0, 0, jnp.sqrt(safe) if o == 2 else safe ** (1 / o))


def _matrix_norm(a: jax.Array, ord: str = "fro", dim: Any = (-2, -1), keepdim: bool = False
                 ) -> jax.Array:
    d0, d1 = (d % a.ndim for d in dim)
    moved = jnp.moveaxis(a, (d0, d1), (-2, -1))
    if ord == "fro":  # the vector 2-norm of the entries: its gradient at zero is 0, not nan
        out = _vector_norm(moved, "2", (-2, -1))
    else:
        out = jnp.linalg.matrix_norm(moved, ord=_ord(ord))
    if keepdim:
        out = jnp.expand_dims(out, tuple(sorted((d0, d1))))
    return out


def _cross(a: jax.Array, b: jax.Array, dim: int = -1) -> jax.Array:
    shape = jnp.broadcast_shapes(a.shape, b.shape)
    return jnp.cross(jnp.broadcast_to(a, shape), jnp.broadcast_to(b, shape), axis=dim)


def _householder(a: jax.Array, tau: jax.Array) -> jax.Array:
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H with v_i the i-th column
    of ``a`` below the diagonal and 1 on it (a product of ops, so JAX differentiates it)."""
    m, n = a.shape[-2:]
    rows = jnp.arange(m)[:, None]
    q = jnp.broadcast_to(jnp.eye(m, n, dtype=a.dtype), a.shape)
    for i in reversed(range(tau.shape[-1])):  # apply H_i to the left of H_{i+1} ... H_k
        v = jnp.where(rows[:, 0] > i, a[..., :, i], jnp.where(rows[:, 0] == i, 1, 0)).astype(
            a.dtype)
        t = tau[..., i][..., None, None]
        q = q - t * v[..., :, None] * (jnp.conj(v)[..., None, :] @ q)
    return q


def _matrix_exp(a: jax.Array) -> jax.Array:
    if a.ndim == 2:
        return jax.scipy.linalg.expm(a)
    flat = a.reshape((-1,) + a.shape[-2:])
    return jax.vmap(jax.scipy.linalg.expm)(flat).reshape(a.shape)


def _cond(a: jax.Array, p: str = "None") -> jax.Array:
    if p == "None":
        s = jnp.linalg.svd(a, compute_uv=False)
        return s[..., 0] / s[..., -1]
    o = _ord(p)
    return jnp.linalg.matrix_norm(a, ord=o) * jnp.linalg.matrix_norm(jnp.linalg.inv(a), ord=o)


def _eig(a: jax.Array) -> tuple:
    # PyTorch differentiates eigenvectors (the loss must be phase-invariant); JAX needs opting in
    w, v = jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return w, v


# -- the ops -----------------------------------------------------------------------------------
det = jaxop("linalg_det(Tensor A) -> Tensor", jnp.linalg.det, check=_SQ("linalg.det"))
slogdet = jaxop("linalg_slogdet(Tensor A) -> (Tensor, Tensor)",
                lambda a: tuple(jnp.linalg.slogdet(a)), check=_SQ("linalg.slogdet"))
inv = jaxop("linalg_inv(Tensor A) -> Tensor", jnp.linalg.inv, check=_SQ("linalg.inv"))
inv_ex = jaxop("linalg_inv_ex(Tensor A) -> (Tensor, Tensor)", _inv_ex,
               check=_SQ("linalg.inv_ex"))
solve = jaxop("linalg_solve(Tensor A, Tensor B, *, bool left=True) -> Tensor", _solve,
              check=_SQ("linalg.solve"))
solve_ex = jaxop("linalg_solve_ex(Tensor A, Tensor B, *, bool left=True) -> (Tensor, Tensor)",
                 _solve_ex, check=_SQ("linalg.solve_ex"))
lstsq = jaxop("linalg_lstsq(Tensor A, Tensor B) -> Tensor", _lstsq,
              check=_SQ("linalg.lstsq", square=False))
cholesky_ex = jaxop("linalg_cholesky_ex(Tensor A, *, bool upper=False) -> (Tensor, Tensor)",
                    _cholesky_ex, check=_SQ("linalg.cholesky"))
qr = jaxop("linalg_qr(Tensor A, str mode='reduced') -> (Tensor, Tensor)",
           lambda a, mode="reduced": tuple(jnp.linalg.qr(a, mode=mode)),
           check=_SQ("linalg.qr", square=False))
eigh = jaxop("linalg_eigh(Tensor A, str UPLO='L') -> (Tensor, Tensor)", _eigh,
             check=_SQ("linalg.eigh"))
eig = jaxop("linalg_eig(Tensor A) -> (Tensor, Tensor)", _eig, check=_SQ("linalg.eig"))
svd = jaxop("linalg_svd(Tensor A, bool full_matrices=True) -> (Tensor, Tensor, Tensor)", _svd,
            check=_SQ("linalg.svd", square=False))
svdvals = jaxop("linalg_svdvals(Tensor A) -> Tensor",
                lambda a: jnp.linalg.svd(a, compute_uv=False),
                check=_SQ("linalg.svdvals", square=False))
pinv = jaxop("linalg_pinv(Tensor A, *, float? atol=None, float? rtol=None, bool hermitian=False)"
             " -> Tensor", _pinv, static=("atol", "rtol"),
             check=_SQ("linalg.pinv", square=False))
matrix_rank = jaxop("linalg_matrix_rank(Tensor A, *, float? atol=None, float? rtol=None, "
                    "bool hermitian=False) -> Tensor", _matrix_rank, static=("atol", "rtol"),
                    differentiable=False, check=_SQ("linalg.matrix_rank", square=False))
matrix_power = jaxop("linalg_matrix_power(Tensor A, int n) -> Tensor",
                     jnp.linalg.matrix_power, check=_SQ("linalg.matrix_power"))
matrix_exp = jaxop("linalg_matrix_exp(Tensor A) -> Tensor", _matrix_exp,
                   check=_SQ("linalg.matrix_exp"))
vecdot = jaxop("linalg_vecdot(Tensor x, Tensor y, *, int dim=-1) -> Tensor",
               lambda x, y, dim=-1: jnp.sum(jnp.conj(x) * y, axis=dim))
cross = jaxop("linalg_cross(Tensor self, Tensor other, *, int dim=-1) -> Tensor", _cross)
householder_product = jaxop("linalg_householder_product(Tensor A, Tensor tau) -> Tensor",
                            _householder, check=_SQ("linalg.householder_product", square=False))
lu_factor_ex = jaxop("linalg_lu_factor_ex(Tensor A, *, bool pivot=True) -> "
                     "(Tensor, Tensor, Tensor)", _lu_factor_ex,
                     check=_SQ("linalg.lu_factor", square=False))
lu = jaxop("linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor, Tensor, Tensor)", _lu,
           check=_SQ("linalg.lu", square=False))
lu_solve = jaxop("linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, "
                 "bool adjoint=False) -> Tensor", _lu_solve, diff=("LU", "B"),
                 check=_SQ("linalg.lu_solve", "LU"))
solve_triangular = jaxop("linalg_solve_triangular(Tensor self, Tensor B, *, bool upper, "
                         "bool left=True, bool unitriangular=False) -> Tensor",
                         _solve_triangular, check=_SQ("linalg.solve_triangular"))
vector_norm = jaxop("linalg_vector_norm(Tensor self, str ord='2', int[]? dim=None, "
                    "bool keepdim=False) -> Tensor", _vector_norm)
matrix_norm = jaxop("linalg_matrix_norm(Tensor self, str ord='fro', int[] dim=[-2,-1], "
                    "bool keepdim=False) -> Tensor", _matrix_norm,
                    check=_SQ("linalg.matrix_norm", square=False))
cond = jaxop("linalg_cond(Tensor self, str p='None') -> Tensor", _cond,
             check=_SQ("linalg.cond", square=False))
diagonal = jaxop("linalg_diagonal(Tensor A, *, int offset=0, int dim1=-2, int dim2=-1) -> Tensor",
                 lambda a, offset=0, dim1=-2, dim2=-1: jnp.diagonal(a, offset, dim1, dim2))

# -- complex numbers ---------------------------------------------------------------------------


def _complex_check(*args: Any) -> None:
    re, im = args
    if re.dtype != im.dtype:
        raise RuntimeError(f"Expected object of scalar type {scalar_type_name(re.dtype)} but got "
                           f"scalar type {scalar_type_name(im.dtype)} for second argument")
    if category(re.dtype) != 2:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{scalar_type_name(re.dtype)} and {scalar_type_name(im.dtype)}")


def _real_view_check(x: Any) -> None:
    if category(x.dtype) != 3:
        raise RuntimeError("view_as_real is only supported for complex tensors")


def _complex_view_check(x: Any) -> None:
    if category(x.dtype) != 2 or x.ndim == 0 or x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")


real = jaxop("real(Tensor self) -> Tensor", jnp.real)
def _imag_check(x: Any) -> None:
    if category(x.dtype) != 3:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


imag = jaxop("imag(Tensor self) -> Tensor", jnp.imag, check=_imag_check)
conj = jaxop("conj(Tensor self) -> Tensor", jnp.conj)
angle = jaxop("angle(Tensor self) -> Tensor",
              lambda x: jnp.angle(x).astype(jnp.real(x).dtype) if category(x.dtype) >= 2
              else jnp.angle(x).astype(jnp.float32))
complex_abs = jaxop("complex_abs(Tensor self) -> Tensor", jnp.abs)
view_as_real = jaxop("view_as_real(Tensor self) -> Tensor",
                     lambda x: jnp.stack([jnp.real(x), jnp.imag(x)], axis=-1),
                     check=_real_view_check)
view_as_complex = jaxop("view_as_complex(Tensor self) -> Tensor",
                        lambda x: jax.lax.complex(x[..., 0], x[..., 1]),
                        check=_complex_view_check)
complex = jaxop("complex(Tensor real, Tensor imag) -> Tensor", jax.lax.complex,
                check=_complex_check)
polar = jaxop("polar(Tensor abs, Tensor angle) -> Tensor",
              lambda r, t: jax.lax.complex(r * jnp.cos(t), r * jnp.sin(t)), check=_complex_check)
sgn = jaxop("sgn(Tensor self) -> Tensor",
            lambda x: jnp.where(x == 0, 0, x / jnp.abs(jnp.where(x == 0, 1, x))).astype(x.dtype))
lu_pivots_permutation = jaxop(
    "lu_pivots_permutation(Tensor pivots, int m) -> Tensor",
    lambda p, m: jax.lax.linalg.lu_pivots_to_permutation(p.astype(jnp.int32) - 1, m).astype(
        jnp.int64), differentiable=False)


# -- LDL (Bunch-Kaufman): LAPACK's sytrf/hetrf and sytrs/hetrs on the host, as PyTorch calls them --
def _lapack(name: str, a: np.ndarray, hermitian: bool) -> Any:
    from scipy.linalg import get_lapack_funcs  # jax depends on scipy
    kind = "he" if hermitian and a.dtype.kind == "c" else "sy"
    return get_lapack_funcs(kind + name, (a,))


def _ldl_host(a: np.ndarray, hermitian: bool) -> tuple:
    a = np.asarray(a)
    flat = a.reshape((-1,) + a.shape[-2:])
    ld, piv, info = np.zeros_like(flat), np.zeros(flat.shape[:-1], np.int32), \
        np.zeros(flat.shape[:1], np.int32)
    for i, m in enumerate(flat):
        f = _lapack("trf", m, hermitian)
        out, p, inf = f(m, lower=1)
        ld[i], piv[i], info[i] = np.tril(out), p, inf
    batch = a.shape[:-2]
    return ld.reshape(a.shape), piv.reshape(batch + a.shape[-1:]), info.reshape(batch)


def _ldl_factor_ex(a: jax.Array, hermitian: bool = False) -> tuple:
    shapes = (jax.ShapeDtypeStruct(a.shape, a.dtype),
              jax.ShapeDtypeStruct(a.shape[:-1], jnp.int32),
              jax.ShapeDtypeStruct(a.shape[:-2], jnp.int32))
    return tuple(jax.pure_callback(lambda m: _ldl_host(m, hermitian), shapes, a,
                                   vmap_method="sequential"))


def _ldl_solve_host(ld: np.ndarray, piv: np.ndarray, b: np.ndarray, hermitian: bool
                    ) -> np.ndarray:
    batch = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ld = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape((-1,) + ld.shape[-2:])
    piv = np.broadcast_to(piv, batch + piv.shape[-1:]).reshape((-1,) + piv.shape[-1:])
    bb = np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
    dtype = np.result_type(ld.dtype, bb.dtype)
    out = np.zeros(bb.shape, dtype)
    for i in range(bb.shape[0]):
        f = _lapack("trs", ld[i].astype(dtype), hermitian)
        out[i] = f(ld[i].astype(dtype), piv[i], bb[i].astype(dtype), lower=1)[0]
    return out.reshape(batch + b.shape[-2:])


def _ldl_solve(ld: jax.Array, piv: jax.Array, b: jax.Array, hermitian: bool = False
               ) -> jax.Array:
    batch = jnp.broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    shape = jax.ShapeDtypeStruct(batch + b.shape[-2:], jnp.result_type(ld.dtype, b.dtype))
    return jax.pure_callback(lambda *v: _ldl_solve_host(*v, hermitian), shape, ld, piv, b,
                             vmap_method="sequential")


def _ldl_solve_check(LD: Any, pivots: Any, B: Any, **kwargs: Any) -> None:
    matrix_check("torch.linalg.ldl_solve", "LD")(LD)
    if B.ndim < 2:
        raise RuntimeError(f"torch.linalg.ldl_solve: The input tensor B must have at least 2 "
                           f"dimensions.")
    if str(np.dtype(pivots.dtype)) != "int32":
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected pivots to be integers. Got "
                           f"{scalar_type_name(pivots.dtype)}")


ldl_factor_ex = jaxop("linalg_ldl_factor_ex(Tensor A, *, bool hermitian=False) "
                      "-> (Tensor, Tensor, Tensor)", _ldl_factor_ex,
                      check=_SQ("torch.linalg.ldl_factor_ex"), differentiable=False)
ldl_solve = jaxop("linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) "
                  "-> Tensor", _ldl_solve, check=_ldl_solve_check, differentiable=False)
