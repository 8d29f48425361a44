"""Arithmetic on sparse COO tensors: products with dense matrices, sums, softmax and the
elementwise ops that keep the pattern. Each is a few ordinary ops on the parts.

>>> import autograd_compile as acg
>>> s = acg.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
>>> acg.sparse.sum(s, dim=1).to_dense().tolist()
[3.0, 9.0]
"""
from __future__ import annotations

from typing import Any, Sequence

from ..kernels import api as A
from ..kernels import sparse as K
from ..kernels.sparse import _name
from ..tensor import Tensor
from ._build import coalesce, to_dense, transpose, with_values
from ._tensor import SparseTensor, derived, make


# -- products ----------------------------------------------------------------------------
def _check_mm(s: SparseTensor, dense: Tensor) -> None:
    if len(s._size) != 2 or s.sparse_dim() != 2:
        raise RuntimeError(f"mm: expected a 2-D sparse matrix (sparse_dim 2), got size "
                           f"{list(s._size)} with sparse_dim {s.sparse_dim()}")
    if dense.ndim != 2:
        raise RuntimeError(f"mm: expected a 2-D dense matrix, got {dense.ndim}-D "
                           f"{list(dense.shape)}")
    if dense.shape[0] != s._size[1]:
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s._size[1]}, got "
                           f"{dense.shape[0]}")
    if dense.dtype != s.dtype:
        raise RuntimeError(f"expected scalar type {_name(s.dtype)} but found "
                           f"{_name(dense.dtype)}")


def mm(mat1: Tensor, mat2: Tensor) -> Tensor:
    """``torch.sparse.mm`` / ``torch.spmm`` / ``torch.mm`` with a sparse operand: a dense
    result, computed over the nnz only (a gather and a segment sum).

    >>> import autograd_compile as acg
    >>> s = acg.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
    >>> acg.sparse.mm(s, acg.tensor([[1.0], [10.0]])).tolist()
    [[20.0], [3.0]]
    """
    if isinstance(mat1, SparseTensor) and isinstance(mat2, SparseTensor):
        return mm(mat1, to_dense(mat2)).to_sparse()
    if isinstance(mat2, SparseTensor):  # dense @ sparse = (sparse^T @ dense^T)^T
        return mm(transpose(mat2, 0, 1), mat1.t()).t()
    if not isinstance(mat1, SparseTensor):
        return A.mm(mat1, mat2)
    _check_mm(mat1, mat2)
    return K.sparse_mm(mat1._indices_t, mat1._values_t, mat2, mat1._size[0])


def matmul(input: Tensor, other: Tensor) -> Tensor:
    """``torch.matmul`` / ``@`` with a sparse matrix: a vector operand as a column."""
    if other.ndim == 1 and not isinstance(other, SparseTensor):
        return mm(input, other.unsqueeze(1)).squeeze(1)
    if input.ndim == 1 and not isinstance(input, SparseTensor):
        return mm(input.unsqueeze(0), other).squeeze(0)
    return mm(input, other)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta: Any = 1, alpha: Any = 1) -> Tensor:
    """``torch.sparse.addmm``: ``beta * mat + alpha * (mat1 @ mat2)``, mat1 sparse."""
    prod = mm(mat1, mat2)
    prod = prod if alpha == 1 else prod * alpha
    if isinstance(mat, SparseTensor):
        mat = to_dense(mat)
    return prod + (mat if beta == 1 else mat * beta) if beta != 0 else prod


# -- reductions ---------------------------------------------------------------------------
def sum(input: SparseTensor, dim: int | Sequence[int] | None = None,
        dtype: Any = None) -> Tensor:
    """``torch.sparse.sum``: all entries (a dense scalar), or over ``dim``: a coalesced
    sparse tensor while sparse dims remain, else dense.

    >>> import autograd_compile as acg
    >>> s = acg.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
    >>> acg.sparse.sum(s).item(), acg.sparse.sum(s, 1)._values().tolist()
    (12.0, [3.0, 9.0])
    """
    if not isinstance(input, SparseTensor):
        return A.sum(input, dim, dtype=dtype) if dim is not None else A.sum(input, dtype=dtype)
    vals = input._values_t if dtype is None else input._values_t.to(dtype)
    if dim is None:
        return vals.sum()
    n, sd = len(input._size), input.sparse_dim()
    dims = sorted({d % n for d in ([dim] if isinstance(dim, int) else dim)})
    dense_dims = [d - sd + 1 for d in dims if d >= sd]
    if dense_dims:
        vals = vals.sum(dense_dims)
    keep = [d for d in range(sd) if d not in dims]
    if not keep:
        return vals.sum(0)
    idx = A.stack([input._indices_t[d] for d in keep])
    size = [input._size[d] for d in range(n) if d not in dims]
    return coalesce(make(idx, vals, size, False))


# -- softmax over the stored entries --------------------------------------------------------
def _groups(s: SparseTensor, dim: int) -> tuple[Tensor, int]:
    """Each entry's group (the entries that share every sparse index but ``dim``'s)."""
    group, count = None, 1
    for d in reversed(range(s.sparse_dim())):
        if d == dim:
            continue
        term = s._indices_t[d] * count
        group = term if group is None else group + term
        count *= s._size[d]
    return (A.zeros_like(s._indices_t[0]) if group is None else group), count


def _softmax(s: SparseTensor, dim: int, log: bool) -> SparseTensor:
    dim = dim % len(s._size)
    vals = s._values_t
    if dim >= s.sparse_dim():  # a dense dim: each entry's own softmax
        axis = dim - s.sparse_dim() + 1
        out = A.log_softmax(vals, axis) if log else A.softmax(vals, axis)
        return with_values(s, out)
    group, count = _groups(s, dim)
    shape = [count, *vals.shape[1:]]
    top = A.zeros(shape, dtype=vals.dtype, device=vals.device).scatter_reduce(
        0, _expand(group, vals), vals.detach(), "amax", include_self=False)
    shifted = vals - top[group]  # (the shift cancels in the gradient: detached)
    total = A.zeros(shape, dtype=vals.dtype, device=vals.device).index_add(
        0, group, shifted.exp())
    out = shifted - total.log()[group] if log else shifted.exp() / total[group]
    return with_values(s, out)


def _expand(group: Tensor, vals: Tensor) -> Tensor:
    """The group index broadcast over the values' dense dims (scatter_reduce's index)."""
    if vals.ndim == 1:
        return group
    return group.reshape([-1] + [1] * (vals.ndim - 1)).expand(list(vals.shape))


def softmax(input: SparseTensor, dim: int, dtype: Any = None) -> SparseTensor:
    """``torch.sparse.softmax``: softmax over the stored entries along ``dim`` (missing
    entries count as -inf, as PyTorch's).

    >>> import autograd_compile as acg
    >>> s = acg.sparse_coo_tensor([[0, 0], [0, 2]], [1.0, 1.0], (1, 3))
    >>> acg.sparse.softmax(s, 1)._values().tolist()
    [0.5, 0.5]
    """
    return _softmax(input if dtype is None else input.to(dtype), dim, False)


def log_softmax(input: SparseTensor, dim: int, dtype: Any = None) -> SparseTensor:
    """``torch.sparse.log_softmax``: :func:`softmax`'s log, computed stably."""
    return _softmax(input if dtype is None else input.to(dtype), dim, True)


# -- elementwise ops that keep the pattern ----------------------------------------------------
def mul(s: SparseTensor, other: Any) -> SparseTensor:
    """``s * scalar`` (a 0-d tensor too): the values scaled."""
    if isinstance(other, Tensor) and other.ndim != 0:
        raise NotImplementedError("sparse * tensor: only a scalar (or 0-d tensor) factor is "
                                  "supported")
    return with_values(s, s._values_t * other)


def add(s: Tensor, other: Tensor, *, alpha: Any = 1) -> Tensor:
    """sparse + sparse (concatenated entries, uncoalesced, as PyTorch); dense + sparse
    (dense); sparse + dense raises PyTorch's error."""
    if not isinstance(s, SparseTensor):
        return s + to_dense(other) * alpha if alpha != 1 else s + to_dense(other)
    if not isinstance(other, SparseTensor):
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
    if tuple(s._size) != tuple(other._size):
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(s._size)} while other has size {list(other._size)}")
    vals = other._values_t if alpha == 1 else other._values_t * alpha
    return make(A.cat([s._indices_t, other._indices_t], 1),
                A.cat([derived(s._values_t), vals.to(s.dtype)], 0), s._size, False)


__all__ = ["mm", "matmul", "addmm", "sum", "softmax", "log_softmax", "mul", "add"]
