"""``acg.linalg``: PyTorch's ``torch.linalg`` (names, signatures, defaults, errors, gradients).

Each function is one op of ``kernels/linalg_more.py`` (a JAX function made an op, its gradient
by ``jax.vjp``) or a composition of ops, so everything runs eagerly, under compiled autograd and
under ``acg.compile``, and differentiates (twice too).

>>> import autograd_compile as acg
>>> A = acg.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
>>> d = acg.linalg.det(A); d.backward(); d.item(), A.grad.tolist()
(5.0, [[3.0, -1.0], [-1.0, 2.0]])
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple, Sequence

import numpy as np

from autograd_compile._dtype import scalar_type_name
from autograd_compile.kernels import linalg_more as K
from autograd_compile.tensor import Tensor

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "common_notes", "cond", "cross", "det",
           "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "householder_product", "inv",
           "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul",
           "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank", "multi_dot", "norm",
           "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals",
           "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]


class LinAlgError(RuntimeError):
    """A matrix the algorithm cannot handle (singular, not positive-definite), as PyTorch's."""


common_notes = {  # PyTorch keeps documentation snippets under this name
    "experimental_warning": "This function is \"experimental\" and it may change in a future "
                            "PyTorch release.",
    "sync_note": "When inputs are on a CUDA device, this function synchronizes that device "
                 "with the CPU.",
    "sync_note_ex": "When the inputs are on a CUDA device, this function synchronizes only when "
                    "check_errors=True.",
    "sync_note_has_ex": "Consider using the *_ex variant, which does not synchronize.",
}


class _SlogDet(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class _WithInfo(NamedTuple):
    result: Tensor
    info: Tensor


class _InvEx(NamedTuple):
    inverse: Tensor
    info: Tensor


class _CholEx(NamedTuple):
    L: Tensor
    info: Tensor


class _QR(NamedTuple):
    Q: Tensor
    R: Tensor


class _Eig(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class _SVD(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class _Lstsq(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


class _LU(NamedTuple):
    P: Tensor
    L: Tensor
    U: Tensor


class _LUFactor(NamedTuple):
    LU: Tensor
    pivots: Tensor


class _LUFactorEx(NamedTuple):
    LU: Tensor
    pivots: Tensor
    info: Tensor


def _concrete(t: Tensor) -> bool:
    """Whether ``t`` holds data (a fake or traced tensor cannot be checked eagerly)."""
    from autograd_compile.tracing.fake import FakeTensor
    import jax
    if isinstance(t, FakeTensor):
        return False
    try:
        return not isinstance(t.__jax_array__(), jax.core.Tracer)
    except Exception:  # no data at all (a proxy): nothing to check
        return False


def _raise_on(info: Tensor, text: str) -> None:
    """PyTorch's LinAlgError when a factorisation failed (eagerly, where data exists)."""
    if _concrete(info) and bool((info != 0).any()):
        first = int(info.reshape(-1)[(info.reshape(-1) != 0).int().argmax()].item())
        raise LinAlgError(text.format(first))


_SINGULAR = ("{op}: The diagonal element {{}} is zero, the inversion could not be completed "
             "because the input matrix is singular.")
_NOT_PD = ("linalg.cholesky: The factorization could not be completed because the input is not "
           "positive-definite (the leading minor of order {} is not positive-definite).")


def det(A: Tensor, *, out: Any = None) -> Tensor:
    """Determinant of each square matrix in ``A`` (..., n, n)."""
    return K.det(A)


def slogdet(A: Tensor, *, out: Any = None) -> _SlogDet:
    """(sign, log|det|) of each square matrix."""
    return _SlogDet(*K.slogdet(A))


def inv(A: Tensor, *, out: Any = None) -> Tensor:
    """Inverse of each square matrix; a singular one raises LinAlgError."""
    result, info = K.inv_ex(A)
    _raise_on(info, _SINGULAR.format(op="linalg.inv"))
    return result


def inv_ex(A: Tensor, *, check_errors: bool = False, out: Any = None) -> _InvEx:
    """(inverse, info): info > 0 where a matrix is singular."""
    result, info = K.inv_ex(A)
    if check_errors:
        _raise_on(info, _SINGULAR.format(op="linalg.inv_ex"))
    return _InvEx(result, info)


def solve(A: Tensor, B: Tensor, *, left: bool = True, out: Any = None) -> Tensor:
    """X with A X = B (left=False: X A = B); B may be a (batch of) vector(s)."""
    result, info = K.solve_ex(A, B, left=left)
    _raise_on(info, "torch.linalg.solve: The solver failed because the input matrix is "
                    "singular.")
    return result


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False,
             out: Any = None) -> _WithInfo:
    result, info = K.solve_ex(A, B, left=left)
    if check_errors:
        _raise_on(info, "torch.linalg.solve_ex: The solver failed because the input matrix is "
                        "singular.")
    return _WithInfo(result, info)


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None
          ) -> _Lstsq:
    """Least-squares solution of A X = B (PyTorch's CPU default driver 'gelsy': residuals and
    singular_values empty, rank filled)."""
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                           f"(gels, gelsy, gelsd, gelss), but got {driver}")
    sol = K.lstsq(A, B)
    empty = A.new_zeros((0,)) if hasattr(A, "new_zeros") else sol.reshape(-1)[:0]
    rank = K.matrix_rank(A)
    return _Lstsq(sol, empty, rank, empty)


def cholesky(A: Tensor, *, upper: bool = False, out: Any = None) -> Tensor:
    """Lower (or upper) Cholesky factor; a matrix that is not positive-definite raises."""
    L, info = K.cholesky_ex(A, upper=upper)
    _raise_on(info, _NOT_PD)
    return L


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False,
                out: Any = None) -> _CholEx:
    L, info = K.cholesky_ex(A, upper=upper)
    if check_errors:
        _raise_on(info, _NOT_PD)
    return _CholEx(L, info)


def qr(A: Tensor, mode: str = "reduced", *, out: Any = None) -> _QR:
    """QR decomposition; mode 'reduced', 'complete' or 'r' (Q empty)."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    if mode == "r":
        r = K.qr(A, "reduced")[1]
        return _QR(r.reshape(-1)[:0], r)
    return _QR(*K.qr(A, mode))


def eigh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> _Eig:
    """Eigenvalues (ascending) and eigenvectors of Hermitian matrices (one triangle read)."""
    if UPLO.upper() not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return _Eig(*K.eigh(A, UPLO))


def eigvalsh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> Tensor:
    return eigh(A, UPLO).eigenvalues


def eig(A: Tensor, *, out: Any = None) -> _Eig:
    """Eigen-decomposition of general square matrices (complex results, CPU)."""
    return _Eig(*K.eig(A))


def eigvals(A: Tensor, *, out: Any = None) -> Tensor:
    return eig(A).eigenvalues


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None,
        out: Any = None) -> _SVD:
    """A = U diag(S) Vh."""
    return _SVD(*K.svd(A, full_matrices))


def svdvals(A: Tensor, *, driver: str | None = None, out: Any = None) -> Tensor:
    return K.svdvals(A)


def _tol(v: Any) -> float | None:
    return None if v is None else float(v)


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,
         out: Any = None) -> Tensor:
    """Moore-Penrose pseudo-inverse (singular values below max(atol, rtol*σ₁) dropped)."""
    return K.pinv(A, atol=_tol(atol), rtol=_tol(rtol), hermitian=hermitian)


def matrix_rank(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False,
                out: Any = None) -> Tensor:
    return K.matrix_rank(A, atol=_tol(atol), rtol=_tol(rtol), hermitian=hermitian)


def matrix_power(A: Tensor, n: int, *, out: Any = None) -> Tensor:
    """A**n by repeated products (n < 0: of the inverse)."""
    return K.matrix_power(A, int(n))


def matrix_exp(A: Tensor) -> Tensor:
    return K.matrix_exp(A)


def cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Any = None) -> Tensor:
    """Cross product of 3-vectors along ``dim`` (broadcasting)."""
    for t in (input, other):
        if t.shape[dim] != 3:
            raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                               f"{input.shape[dim]} and {other.shape[dim]}")
    return K.cross(input, other, dim=dim)


def multi_dot(tensors: Sequence[Tensor], *, out: Any = None) -> Tensor:
    """The chained product; the first may be a row vector, the last a column vector."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    result = tensors[0]
    for t in tensors[1:]:
        result = result @ t
    return result


def householder_product(A: Tensor, tau: Tensor, *, out: Any = None) -> Tensor:
    return K.householder_product(A, tau)


def tensorinv(A: Tensor, ind: int = 2, *, out: Any = None) -> Tensor:
    """The inverse of ``A`` seen as a map from its last dims to its first ``ind`` dims."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape, in_shape = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    rows = math.prod(out_shape)
    return inv(A.reshape(rows, -1)).reshape(in_shape + out_shape)


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None, *,
                out: Any = None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        rest = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(rest + dims)
    x_shape = tuple(A.shape[B.ndim:])
    return solve(A.reshape(math.prod(A.shape[:B.ndim]), -1), B.reshape(-1)).reshape(x_shape)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """Columns x**0, x**1, ..., x**(N-1) (increasing powers, PyTorch's order)."""
    import autograd_compile as acg
    n = x.shape[-1] if N is None else N
    if n < 1:
        raise RuntimeError("N must be greater than 1.")
    return acg.stack([acg.ones_like(x)] + [x ** k for k in range(1, n)], -1)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1, out: Any = None) -> Tensor:
    """Sum over ``dim`` of conj(x) * y."""
    return K.vecdot(x, y, dim=dim)


def matmul(input: Tensor, other: Tensor, *, out: Any = None) -> Tensor:
    return input @ other


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``torch.diagonal`` with the last two dims as default: a view, as PyTorch's (an
    in-place write on it reaches ``A``)."""
    return A.diagonal(offset, dim1, dim2)


def lu_factor(A: Tensor, *, pivot: bool = True, out: Any = None) -> _LUFactor:
    """(LU, pivots): PyTorch's packed LU with 1-based LAPACK pivots (int32)."""
    lu_, piv, _ = K.lu_factor_ex(A, pivot=pivot)
    return _LUFactor(lu_, piv)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False,
                 out: Any = None) -> _LUFactorEx:
    lu_, piv, info = K.lu_factor_ex(A, pivot=pivot)
    if check_errors:
        _raise_on(info, "torch.linalg.lu_factor_ex: U[{0},{0}] is zero and using it on "
                        "lu_solve would result in a division by zero.")
    return _LUFactorEx(lu_, piv, info)


def lu(A: Tensor, *, pivot: bool = True, out: Any = None) -> _LU:
    """A = P L U."""
    return _LU(*K.lu(A, pivot=pivot))


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False,
             out: Any = None) -> Tensor:
    return K.lu_solve(LU, pivots, B, left=left, adjoint=adjoint)


class _LDL(NamedTuple):
    LD: Tensor
    pivots: Tensor


class _LDLEx(NamedTuple):
    LD: Tensor
    pivots: Tensor
    info: Tensor


_LDL_SINGULAR = ("{op}: The factorization could not be completed because the block diagonal "
                 "matrix D is singular (D[{{0}},{{0}}] is exactly zero).")


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False,
                  out: Any = None) -> _LDLEx:
    """(LD, pivots, info): LAPACK's Bunch-Kaufman LDL^T (LDL^H with ``hermitian``) in compact
    form, pivots 1-based (negative for 2x2 blocks), as PyTorch returns them. No gradient."""
    LD, piv, info = K.ldl_factor_ex(A, hermitian=hermitian)
    if check_errors:
        _raise_on(info, _LDL_SINGULAR.format(op="torch.linalg.ldl_factor_ex"))
    return _LDLEx(LD, piv, info)


def ldl_factor(A: Tensor, *, hermitian: bool = False, out: Any = None) -> _LDL:
    """(LD, pivots) of ldl_factor_ex; a singular D raises LinAlgError."""
    LD, piv, info = K.ldl_factor_ex(A, hermitian=hermitian)
    _raise_on(info, _LDL_SINGULAR.format(op="torch.linalg.ldl_factor"))
    return _LDL(LD, piv)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False,
              out: Any = None) -> Tensor:
    """X with A X = B from A's ldl_factor."""
    return K.ldl_solve(LD, pivots, B, hermitian=hermitian)


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False, out: Any = None) -> Tensor:
    return K.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)


def _ord_text(ord: Any) -> str:
    if isinstance(ord, str):
        return ord
    return repr(float(ord)) if math.isfinite(ord) else ("inf" if ord > 0 else "-inf")


def _cast(x: Tensor, dtype: Any) -> Tensor:
    return x if dtype is None else x.to(dtype)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (every element by default)."""
    if x.dtype.kind not in "fcV":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {scalar_type_name(x.dtype)}")
    dims = None if dim is None else [dim] if isinstance(dim, (int, np.integer)) else list(dim)
    return K.vector_norm(_cast(x, dtype), _ord_text(ord), dims, keepdim)


def matrix_norm(A: Tensor, ord: Any = "fro", dim: Sequence[int] = (-2, -1),
                keepdim: bool = False, *, dtype: Any = None, out: Any = None) -> Tensor:
    """Frobenius, nuclear, or induced ``ord``-norm of the matrices on ``dim``."""
    if isinstance(ord, str) and ord not in ("fro", "nuc"):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    return K.matrix_norm(_cast(A, dtype), _ord_text(ord), list(dim), keepdim)


def norm(A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *,
         dtype: Any = None, out: Any = None) -> Tensor:
    """A vector norm (dim an int, or a 1-D input) or a matrix norm (dim a pair, or 2-D)."""
    if dim is not None and not isinstance(dim, (int, np.integer)) and len(dim) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None and A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    if ord is None:
        ord = 2
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


def cond(A: Tensor, p: Any = None, *, out: Any = None) -> Tensor:
    """Condition number in the ``p`` norm (2-norm by default: σ_max / σ_min)."""
    return K.cond(A, "None" if p is None or p == 2 else _ord_text(p))


from autograd_compile.kernels._outarg import install_out  # noqa: E402

install_out(globals(), __all__, "linalg_")  # out= writes into the given tensor(s)
