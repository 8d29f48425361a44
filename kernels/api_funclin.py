"""Top-level ``acg.*`` functions and Tensor methods that are ``linalg``/``special``/complex
functions under PyTorch's older names and signatures (``torch.svd`` returns V, not Vh;
``torch.cholesky_solve(B, L)``; ``Tensor.det()``; ``Tensor.real``).

>>> import autograd_compile as acg
>>> A = acg.tensor([[4.0, 1.0], [1.0, 3.0]])
>>> A.det().item(), f"{acg.inverse(A).tolist()[0][0]:.6f}"
(11.0, '0.272727')
"""
from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from autograd_compile._dtype import of as dtype_of
from autograd_compile.tensor import Tensor
from autograd_compile.amp.autocast_mode import autocast_op

from autograd_compile.tracing.fake import TensorMeta

from . import linalg_more as K
from ._defop import defop, reduce_grad, wants
from ._shapes import broadcast_shapes

__all__ = ["det", "logdet", "slogdet", "inverse", "cholesky", "cholesky_solve",
           "cholesky_inverse", "svd", "qr", "pinverse", "matrix_power", "matrix_exp", "cross",
           "lgamma", "digamma", "polygamma", "erfinv", "erfc", "i0", "sinc", "xlogy", "logit",
           "mvlgamma", "igamma", "igammac", "exp2", "lu_solve", "lu_unpack", "triangular_solve",
           "vander", "real", "imag", "conj", "conj_physical", "resolve_conj", "is_conj", "angle",
           "view_as_real", "view_as_complex", "complex", "polar", "is_complex", "sgn",
           "complex128", "cfloat", "cdouble", "install_funclin_methods"]

complex128 = cdouble = dtype_of("complex128")
cfloat = dtype_of("complex64")


def _linalg() -> Any:
    from autograd_compile import linalg
    return linalg


def _special() -> Any:
    from autograd_compile import special
    return special


def det(input: Tensor) -> Tensor:
    return _linalg().det(input)


def slogdet(input: Tensor) -> Any:
    return _linalg().slogdet(input)


def logdet(input: Tensor) -> Tensor:
    """log(det(A)): nan for a negative determinant, -inf for a singular matrix."""
    sign, logabs = K.slogdet(input)
    return logabs + sign.log()


def inverse(input: Tensor, *, out: Any = None) -> Tensor:
    return _linalg().inv(input)


def cholesky(input: Tensor, upper: bool = False, *, out: Any = None) -> Tensor:
    return _linalg().cholesky(input, upper=upper)


# -- cholesky_solve: X = (L L^H)^-1 B ------------------------------------------------------------
def _cholesky_solve(b: jax.Array, factor: jax.Array, upper: bool = False) -> jax.Array:
    """Two triangular solves; only ``factor``'s own triangle is read (as LAPACK's potrs)."""
    batch = jnp.broadcast_shapes(b.shape[:-2], factor.shape[:-2])
    b = jnp.broadcast_to(b, batch + b.shape[-2:])
    factor = jnp.broadcast_to(factor, batch + factor.shape[-2:])
    solve = partial(jax.lax.linalg.triangular_solve, factor, left_side=True, lower=not upper)
    # upper: A = U^H U, so U^H y = B, then U x = y; lower: L y = B, then L^H x = y
    y = solve(b, transpose_a=upper, conjugate_a=upper)
    return solve(y, transpose_a=not upper, conjugate_a=not upper)


def _cholesky_solve_check(b: Any, factor: Any, upper: bool = False) -> None:
    if b.dtype != factor.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{b.dtype.name} and A of type {factor.dtype.name} instead.")
    if b.ndim < 2 or factor.ndim < 2 or factor.shape[-1] != factor.shape[-2] \
            or factor.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{factor.shape[-2] if factor.ndim > 1 else 1} by "
                           f"{factor.shape[-1] if factor.ndim else 1} but each b matrix is "
                           f"{b.shape[-2] if b.ndim > 1 else 1} by {b.shape[-1] if b.ndim else 1}")


def _cholesky_solve_rule(b: Any, factor: Any, upper: bool = False) -> TensorMeta:
    _cholesky_solve_check(b, factor, upper)
    batch = broadcast_shapes(tuple(b.shape[:-2]), tuple(factor.shape[:-2]))
    return TensorMeta(tuple(batch) + tuple(b.shape[-2:]), b.dtype)


def _cholesky_solve_backward(g: Any, b: Any, factor: Any, upper: bool, out: Any) -> tuple:
    """PyTorch's rule, the factor taken as a general (unconstrained) matrix, so both of its
    triangles get a gradient: dB = A^-1 g; dL = -(dB X^H + X dB^H) L (upper: -U (...))."""
    gb = _cholesky_solve_op(g, factor, upper)
    if not wants(factor):
        return reduce_grad(gb, b), None
    common = gb @ out.mT.conj()
    common = common + common.mT.conj()
    gf = -(factor @ common) if upper else -(common @ factor)
    return reduce_grad(gb, b), reduce_grad(gf, factor)


_cholesky_solve_op = defop("cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor",
                           _cholesky_solve, shape=_cholesky_solve_rule, check=True,
                           save=("input2", "out"),
                           backward=_cholesky_solve_backward)


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *, out: Any = None
                   ) -> Tensor:
    """X with A X = B, given B (``input``) and A's Cholesky factor (``input2``)."""
    return _cholesky_solve_op(input, input2, upper)


def cholesky_inverse(input: Tensor, upper: bool = False, *, out: Any = None) -> Tensor:
    """The inverse of A from its Cholesky factor."""
    import autograd_compile as acg
    n = input.shape[-1]
    eye = acg.eye(n, dtype=input.dtype).expand(*input.shape)
    return cholesky_solve(eye, input, upper)


class _SVD(NamedTuple):
    U: Tensor
    S: Tensor
    V: Tensor


def svd(input: Tensor, some: bool = True, compute_uv: bool = True, *, out: Any = None) -> _SVD:
    """PyTorch's old svd: (U, S, V) with A = U diag(S) V^H; compute_uv=False gives zero U, V."""
    U, S, Vh = K.svd(input, not some)
    if not compute_uv:
        import autograd_compile as acg
        m, n = input.shape[-2:]
        return _SVD(acg.zeros(*input.shape[:-2], m, m, dtype=input.dtype), S.detach(),
                    acg.zeros(*input.shape[:-2], n, n, dtype=input.dtype))
    return _SVD(U, S, Vh.mT.conj())


class _QR(NamedTuple):
    Q: Tensor
    R: Tensor


def qr(input: Tensor, some: bool = True, *, out: Any = None) -> _QR:
    return _QR(*K.qr(input, "reduced" if some else "complete"))


@autocast_op("pinverse")
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    return _linalg().pinv(input, rtol=rcond)


def matrix_power(input: Tensor, n: int) -> Tensor:
    return _linalg().matrix_power(input, n)


def matrix_exp(input: Tensor) -> Tensor:
    return _linalg().matrix_exp(input)


def cross(input: Tensor, other: Tensor, dim: int | None = None, *, out: Any = None) -> Tensor:
    """Cross product along ``dim`` (None: the first dim of size 3, PyTorch's old default)."""
    if dim is None:
        dim = next((i for i, s in enumerate(input.shape) if s == 3), -1)
    return _linalg().cross(input, other, dim=dim)


def lgamma(input: Tensor, *, out: Any = None) -> Tensor:
    return _special().gammaln(input)


def digamma(input: Tensor, *, out: Any = None) -> Tensor:
    return _special().digamma(input)


def polygamma(n: int, input: Tensor, *, out: Any = None) -> Tensor:
    return _special().polygamma(n, input)


def erfinv(input: Tensor, *, out: Any = None) -> Tensor:
    return _special().erfinv(input)


def erfc(input: Tensor, *, out: Any = None) -> Tensor:
    return _special().erfc(input)


def i0(input: Tensor, *, out: Any = None) -> Tensor:
    return _special().i0(input)


def sinc(input: Tensor, *, out: Any = None) -> Tensor:
    return _special().sinc(input)


def exp2(input: Tensor, *, out: Any = None) -> Tensor:
    return _special().exp2(input)


def xlogy(input: Any, other: Any, *, out: Any = None) -> Tensor:
    return _special().xlogy(input, other)


def logit(input: Tensor, eps: float | None = None, *, out: Any = None) -> Tensor:
    return _special().logit(input, eps)


def mvlgamma(input: Tensor, p: int, *, out: Any = None) -> Tensor:
    return _special().multigammaln(input, p)


def igamma(input: Tensor, other: Tensor, *, out: Any = None) -> Tensor:
    return _special().gammainc(input, other)


def igammac(input: Tensor, other: Tensor, *, out: Any = None) -> Tensor:
    return _special().gammaincc(input, other)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out: Any = None) -> Tensor:
    return K.lu_solve(LU_data, LU_pivots, b)


class _LUUnpack(NamedTuple):
    P: Tensor
    L: Tensor
    U: Tensor


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True, *, out: Any = None) -> _LUUnpack:
    """(P, L, U) from a packed LU factorisation and its 1-based pivots."""
    P, L, U = _lu_unpack(LU_data, LU_pivots)
    return _LUUnpack(P, L, U)


def _lu_unpack(lu: Tensor, pivots: Tensor) -> tuple:
    import autograd_compile as acg
    m, n = lu.shape[-2:]
    k = min(m, n)
    L = acg.tril(lu[..., :, :k], -1) + acg.eye(m, k, dtype=lu.dtype)
    U = acg.triu(lu[..., :k, :])
    perm = K.lu_pivots_permutation(pivots, m)
    eye = acg.eye(m, dtype=lu.dtype)
    return eye[perm].mT, L, U


class _TriSolve(NamedTuple):
    solution: Tensor
    cloned_coefficient: Tensor


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False, *, out: Any = None) -> _TriSolve:
    """Solve A X = b (A^T X = b with transpose) for triangular A; returns (X, A)."""
    coeff = A.mT if transpose else A
    x = K.solve_triangular(coeff, b, upper=upper != transpose, unitriangular=unitriangular)
    return _TriSolve(x, A.clone())


def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Columns x**(N-1), ..., x, 1 (decreasing powers unless ``increasing``)."""
    v = _linalg().vander(x, N=N)
    return v if increasing else v.flip(-1)


# -- complex numbers ----------------------------------------------------------------------------
def is_complex(input: Tensor) -> bool:
    return input.dtype.kind == "c"


def real(input: Tensor) -> Tensor:
    return K.real(input) if is_complex(input) else input


def imag(input: Tensor) -> Tensor:
    return K.imag(input)


def conj(input: Tensor) -> Tensor:
    return K.conj(input) if is_complex(input) else input


conj_physical = conj


def resolve_conj(input: Tensor) -> Tensor:
    return input  # conjugation is always materialised here


def is_conj(input: Tensor) -> bool:
    return False  # no lazy conjugate bit: conj() materialises


def angle(input: Tensor, *, out: Any = None) -> Tensor:
    return K.angle(input)


def view_as_real(input: Tensor) -> Tensor:
    return K.view_as_real(input)


def view_as_complex(input: Tensor) -> Tensor:
    return K.view_as_complex(input)


def complex(real: Tensor, imag: Tensor, *, out: Any = None) -> Tensor:  # noqa: A001
    return K.complex(real, imag)


def polar(abs: Tensor, angle: Tensor, *, out: Any = None) -> Tensor:  # noqa: A002
    return K.polar(abs, angle)


def sgn(input: Tensor, *, out: Any = None) -> Tensor:
    """sign for real tensors, z/|z| (0 at 0) for complex ones."""
    return K.sgn(input) if is_complex(input) else input.sign()


_METHODS = ("det logdet slogdet inverse cholesky cholesky_solve cholesky_inverse svd qr "
            "pinverse matrix_power matrix_exp cross lgamma digamma erfinv erfc i0 sinc exp2 "
            "xlogy logit mvlgamma igamma igammac conj conj_physical resolve_conj is_conj angle "
            "is_complex sgn").split()


def install_funclin_methods(cls: type) -> None:
    """Tensor methods that are the functions above (input first), and real/imag properties."""
    g = globals()
    for name in _METHODS:
        setattr(cls, name, g[name])
    cls.polygamma = lambda self, n: polygamma(n, self)
    cls.lu_solve = lambda self, LU_data, LU_pivots: lu_solve(self, LU_data, LU_pivots)
    cls.triangular_solve = lambda self, A, upper=True, transpose=False, unitriangular=False: \
        triangular_solve(self, A, upper, transpose, unitriangular)
    cls.lu = lambda self, pivot=True, get_infos=False: _lu_method(self, pivot, get_infos)
    cls.real = property(real)
    cls.imag = property(imag)


def _lu_method(self: Tensor, pivot: bool, get_infos: bool) -> tuple:
    lu_, piv, info = K.lu_factor_ex(self, pivot=pivot)
    return (lu_, piv, info) if get_infos else (lu_, piv)

from ._outarg import install_out  # noqa: E402

install_out(globals(), __all__, "")  # out= writes into the given tensor(s)
