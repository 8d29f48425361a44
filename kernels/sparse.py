"""Sparse COO kernels: each op takes a sparse tensor's parts (``indices`` [sparse_dim, nnz]
int64, ``values`` [nnz, ...]) as ordinary tensors, so autograd, compiled autograd and
``acg.compile`` see ordinary ops (``autograd_compile.sparse`` builds the user surface on them).

Work is proportional to nnz: a gather of the rows each entry reads, then a segment sum
(``jax.ops.segment_sum``) into the rows it writes; nothing is densified. The four ops close
under differentiation (the gradient of each is written in the others)::

    sparse_mm(i, v, D, m)    [m, n] = S @ D             dv: sparse_sddmm   dD: sparse_mm(i^T)
    sparse_sddmm(i, A, B)    [nnz]  = (A @ B^T) at i    dA, dB: sparse_mm
    sparse_to_dense(i, v, s) dense S                    dv: sparse_gather
    sparse_gather(D, i)      [nnz, ...] = D at i        dD: sparse_to_dense

>>> import autograd_compile as acg
>>> from autograd_compile.kernels import sparse as K
>>> i = acg.tensor([[0, 1], [1, 0]])
>>> K.sparse_mm(i, acg.tensor([2.0, 3.0]), acg.ones(2, 1), 2).tolist()
[[2.0], [3.0]]
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from autograd_compile.tracing.fake import TensorMeta

from ._defop import defop
from .elementwise import wants


def _flip(indices: Any) -> Any:
    """The transposed pattern: rows and columns swapped (an op, so traces see it)."""
    return indices.flip([0])


def _same_dtype(op: str, a: Any, b: Any) -> None:
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: expected scalar type {_name(a.dtype)} but found "
                           f"{_name(b.dtype)}")


def _name(dtype: Any) -> str:
    """PyTorch's scalar type names (Float, Double, Half ...) for its dtype messages."""
    names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
             "int64": "Long", "int32": "Int", "complex64": "ComplexFloat",
             "complex128": "ComplexDouble"}
    text = getattr(dtype, "name", str(dtype))
    return names.get(text, text)


# -- sparse @ dense --------------------------------------------------------------------------
def _spmm(indices: Any, values: Any, dense: Any, rows: int) -> Any:
    contrib = values[:, None] * dense[indices[1]]
    return jax.ops.segment_sum(contrib, indices[0], num_segments=rows)


def _spmm_rule(indices: Any, values: Any, dense: Any, rows: int) -> TensorMeta:
    _same_dtype("sparse_mm", values, dense)
    if dense.ndim != 2 or values.ndim != 1 or indices.ndim != 2:
        raise RuntimeError(f"sparse_mm: expected 1-D values and a 2-D dense matrix, got values "
                           f"{list(values.shape)} and dense {list(dense.shape)}")
    return TensorMeta((rows, dense.shape[1]), dense.dtype)


def _spmm_backward(g: Any, indices: Any, values: Any, dense: Any, rows: int, out: Any) -> tuple:
    gv = sparse_sddmm(indices, g, dense) if wants(values) else None
    gd = sparse_mm(_flip(indices), values, g, dense.shape[0]) if wants(dense) else None
    return None, gv, gd


sparse_mm = defop("sparse_mm(Tensor indices, Tensor values, Tensor dense, SymInt rows) -> Tensor",
                  _spmm, shape=_spmm_rule, check=True, backward=_spmm_backward,
                  save={"values": ("indices", "dense"), "dense": ("indices", "values")})


# -- (A @ B^T) sampled at the pattern ----------------------------------------------------------
def _sddmm(indices: Any, a: Any, b: Any) -> Any:
    return jnp.sum(a[indices[0]] * b[indices[1]], axis=-1)


def _sddmm_rule(indices: Any, a: Any, b: Any) -> TensorMeta:
    _same_dtype("sparse_sddmm", a, b)
    return TensorMeta((indices.shape[1],), a.dtype)


def _sddmm_backward(g: Any, indices: Any, a: Any, b: Any, out: Any) -> tuple:
    ga = sparse_mm(indices, g, b, a.shape[0]) if wants(a) else None
    gb = sparse_mm(_flip(indices), g, a, b.shape[0]) if wants(b) else None
    return None, ga, gb


sparse_sddmm = defop("sparse_sddmm(Tensor indices, Tensor a, Tensor b) -> Tensor", _sddmm,
                     shape=_sddmm_rule, check=True, backward=_sddmm_backward,
                     save={"a": ("indices", "b"), "b": ("indices", "a")})


# -- to_dense and its inverse, the values read at a pattern ------------------------------------
def _to_dense(indices: Any, values: Any, size: Any) -> Any:
    base = jnp.zeros(tuple(size), values.dtype)
    return base.at[tuple(indices[d] for d in range(indices.shape[0]))].add(values)


def _to_dense_rule(indices: Any, values: Any, size: Any) -> TensorMeta:
    return TensorMeta(tuple(size), values.dtype)


sparse_to_dense = defop(
    "sparse_to_dense(Tensor indices, Tensor values, SymInt[] size) -> Tensor", _to_dense,
    shape=_to_dense_rule, save=("indices",),
    backward=lambda g, indices, values, size, out: (None, sparse_gather(g, indices)))


def _gather(dense: Any, indices: Any) -> Any:
    return dense[tuple(indices[d] for d in range(indices.shape[0]))]


def _gather_rule(dense: Any, indices: Any) -> TensorMeta:
    return TensorMeta((indices.shape[1], *dense.shape[indices.shape[0]:]), dense.dtype)


sparse_gather = defop(
    "sparse_gather(Tensor dense, Tensor indices) -> Tensor", _gather, shape=_gather_rule,
    save=("indices",),
    backward=lambda g, dense, indices, out: (sparse_to_dense(indices, g, list(dense.shape)),
                                             None))

__all__ = ["sparse_mm", "sparse_sddmm", "sparse_to_dense", "sparse_gather"]
