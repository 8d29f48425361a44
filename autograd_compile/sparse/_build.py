"""Making sparse COO tensors: the checked constructor, ``to_sparse``, ``coalesce``,
``to_dense`` and the layout-keeping reshapes (``t``, ``transpose``, ``to``).

>>> import autograd_compile as acg
>>> s = acg.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()
>>> s._indices().tolist(), s._values().tolist()
([[0, 1], [1, 0]], [2.0, 3.0])
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..kernels import api as A
from ..kernels import sparse as K
from ..tensor import Tensor
from ._tensor import PER_POSITION, SparseTensor, derived, host_indices, make


def _as_tensor(data: Any, dtype: Any = None) -> Tensor:
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype == dtype else data.to(dtype)
    return A.tensor(data, dtype=dtype)


def sparse_coo_tensor(indices: Any, values: Any, size: Sequence[int] | None = None, *,
                      dtype: Any = None, device: Any = None, requires_grad: bool = False,
                      check_invariants: bool | None = None, is_coalesced: bool | None = None
                      ) -> SparseTensor:
    """``torch.sparse_coo_tensor``: entries ``values[k]`` at ``indices[:, k]``; ``size``
    inferred (max index + 1) when not given. Indices out of range raise, as PyTorch's
    ``check_invariants=True`` does (the check reads the indices on the host, eagerly).

    >>> import autograd_compile as acg
    >>> acg.sparse_coo_tensor([[0, 1], [2, 0]], [1.0, 2.0]).shape
    acg.Size([2, 3])
    """
    idx = _as_tensor(indices)
    if idx.dtype != A.int64:
        idx = idx.to(A.int64)
    vals = _as_tensor(values, dtype)
    if device is not None:
        idx, vals = idx.to(device), vals.to(device)
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if vals.ndim == 0:
        raise RuntimeError("values must have at least one dimension (nnz, ...)")
    if idx.shape[1] != vals.shape[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{idx.shape[1]}, nnz from values: {vals.shape[0]}")
    size = _checked_size(idx, vals, size)
    # values that require grad: a view (gradients reach them); else a new leaf of our own
    vals = derived(vals) if vals._requires_grad else vals.detach()
    s = make(idx, vals, size, bool(is_coalesced))
    if requires_grad:
        s.requires_grad_(True)
    return s


def _checked_size(idx: Tensor, vals: Tensor, size: Sequence[int] | None) -> tuple:
    sparse_dim, dense = idx.shape[0], tuple(vals.shape[1:])
    host = _maybe_host(idx)
    if size is None:
        if host is None:
            raise RuntimeError("sparse_coo_tensor: give the size when the indices are traced")
        top = host.max(axis=1) + 1 if host.shape[1] else np.zeros(sparse_dim, np.int64)
        return tuple(int(v) for v in top) + dense
    size = tuple(int(d) for d in size)
    if len(size) != sparse_dim + len(dense):
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) "
                           f"= {len(size)}, sparse_dim = {sparse_dim}, dense_dim = {len(dense)}")
    if size[sparse_dim:] != dense:
        raise RuntimeError(f"values has incorrect size, expected {[idx.shape[1], *size[sparse_dim:]]}"
                           f", got {[idx.shape[1], *dense]}")
    if host is not None and host.size:
        _check_bounds(host, size)
    return size


def _maybe_host(idx: Tensor) -> np.ndarray | None:
    try:
        return host_indices(idx, "")
    except RuntimeError:
        return None


def _check_bounds(host: np.ndarray, size: tuple) -> None:
    low, high = host.min(axis=1), host.max(axis=1)
    for d in range(host.shape[0]):
        if low[d] < 0:
            raise RuntimeError(f"found negative index {low[d]} for dim {d}")
        if high[d] >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {high[d]}")


# -- conversions ---------------------------------------------------------------------------
def to_dense(s: Tensor, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
    """The dense tensor (entries at repeated indices summed); a dense input is returned."""
    if not isinstance(s, SparseTensor):
        return s if dtype is None else s.to(dtype)
    out = K.sparse_to_dense(s._indices_t, s._values_t, list(s._size))
    return out if dtype is None else out.to(dtype)


def to_sparse(t: Tensor, sparse_dim: int | None = None, *, layout: Any = None,
              blocksize: Any = None, dense_dim: int | None = None) -> SparseTensor:
    """``dense.to_sparse()``: the non-zero entries, coalesced (eager: nnz is data).

    >>> import autograd_compile as acg
    >>> acg.tensor([0.0, 5.0]).to_sparse()._nnz()
    1
    """
    if isinstance(t, SparseTensor):
        return t
    if layout is not None and str(layout) != "torch.sparse_coo":
        raise NotImplementedError(f"to_sparse(layout={layout}): only torch.sparse_coo is built")
    sd = t.ndim if sparse_dim is None else int(sparse_dim)
    mask = t != 0
    if sd < t.ndim:  # hybrid: a slice counts when any of its entries does
        mask = mask.reshape(list(t.shape[:sd]) + [-1]).any(-1)
    idx = A.nonzero(mask).t().contiguous() if t.ndim else A.zeros(0, 0, dtype=A.int64)
    return make(idx, K.sparse_gather(t, idx), tuple(t.shape), True)


def coalesce(s: SparseTensor) -> SparseTensor:
    """Sorted, unique indices; the values at a repeated index summed (eager: nnz is data).

    >>> import autograd_compile as acg
    >>> acg.sparse_coo_tensor([[1, 0, 1]], [1.0, 2.0, 3.0]).coalesce()._values().tolist()
    [2.0, 4.0]
    """
    if s._coalesced:
        return s
    host = host_indices(s._indices_t, "coalesce()")
    sd = host.shape[0]
    linear = np.ravel_multi_index(tuple(host), s._size[:sd]) if host.size else \
        np.zeros(0, np.int64)
    unique, inverse = np.unique(linear, return_inverse=True)
    idx = np.stack(np.unravel_index(unique, s._size[:sd])) if sd else np.zeros((0, 0))
    vals = s._values_t
    summed = A.zeros(len(unique), *vals.shape[1:], dtype=vals.dtype, device=vals.device) \
        .index_add(0, A.tensor(inverse.reshape(-1), device=vals.device), vals)
    return make(A.tensor(idx.reshape(sd, -1).astype(np.int64), device=vals.device), summed,
                s._size, True)


def per_position(indices: Tensor, grad: Tensor, size: tuple) -> SparseTensor:
    """An uncoalesced leaf's gradient as PyTorch's: once per position (coalesced), the
    entries at one position having the same gradient (the mean, for a nonlinear use)."""
    s = coalesce(make(indices, grad, size, False))
    ones = A.ones(indices.shape[1], *([1] * (grad.ndim - 1)), dtype=grad.dtype,
                  device=grad.device)
    counts = coalesce(make(indices, ones, size, False))._values_t
    return make(s._indices_t, s._values_t / counts, size, True)


PER_POSITION.append(per_position)


# -- layout-keeping reshapes and casts ------------------------------------------------------
def transpose(s: SparseTensor, dim0: int, dim1: int) -> SparseTensor:
    """Swap two sparse dims (their index rows) or two dense dims (of the values)."""
    n, sd = len(s._size), s.sparse_dim()
    d0, d1 = dim0 % n, dim1 % n
    size = list(s._size)
    size[d0], size[d1] = size[d1], size[d0]
    if d0 == d1:
        return s
    if d0 < sd and d1 < sd:
        order = list(range(sd))
        order[d0], order[d1] = order[d1], order[d0]
        idx = A.stack([s._indices_t[k] for k in order])
        return make(idx, derived(s._values_t), size, False)
    if d0 >= sd and d1 >= sd:
        return make(s._indices_t, s._values_t.transpose(d0 - sd + 1, d1 - sd + 1), size,
                    s._coalesced)
    raise RuntimeError(f"transpose: cannot swap a sparse dim with a dense dim (dims {dim0} and "
                       f"{dim1}; sparse_dim={sd})")


def t(s: SparseTensor) -> SparseTensor:
    """The transpose of a 2-D (or 1-D) sparse matrix."""
    if len(s._size) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{len(s._size)}D")
    return s if len(s._size) < 2 else transpose(s, 0, 1)


def to(s: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
    """``.to(dtype)`` / ``.to(device)`` of the values (the indices follow the device)."""
    vals = s._values_t.to(*args, **kwargs)
    idx = s._indices_t if vals.device == s._indices_t.device else s._indices_t.to(vals.device)
    if vals is s._values_t and idx is s._indices_t:
        return s
    return make(idx, vals, s._size, s._coalesced)


def with_values(s: SparseTensor, values: Tensor) -> SparseTensor:
    """The same pattern with new values (``mul(scalar)``, ``neg`` ...)."""
    return make(s._indices_t, values, s._size, s._coalesced)


__all__ = ["sparse_coo_tensor", "to_dense", "to_sparse", "coalesce", "transpose", "t", "to",
           "with_values"]
