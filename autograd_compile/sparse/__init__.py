"""``torch.sparse``: sparse COO tensors, as PyTorch's, built on ordinary ops.

A sparse COO tensor (:class:`SparseTensor`, ``layout == torch.sparse_coo``) is a Tensor
subclass holding two plain tensors and a size:

- ``_indices()``: int64 [sparse_dim, nnz], the position of each stored entry;
- ``_values()``: [nnz, *dense_dims], the entries (repeated positions add up until
  ``coalesce()`` merges them);
- ``shape``: the size of the tensor it stands for.

Every operation on it is an op of ``kernels/sparse.py`` (or any ordinary op) on those parts,
so autograd, both compiled-autograd backends and ``acg.compile`` traces see ordinary ops;
the work is proportional to nnz (a gather and a segment sum, never a densified matmul)::

    S @ D      = sparse_mm(indices, values, D, rows)     D.grad dense, values.grad sampled
    S.to_dense = sparse_to_dense(indices, values, size)  values.grad = grad at the pattern

Autograd only ever sees the values: a leaf sparse tensor that requires grad is a leaf values
tensor, and its ``.grad`` is that tensor's gradient at its own pattern (a sparse tensor, as
``torch.sparse.mm`` gives). ``nn.Embedding(sparse=True)`` gives its weight a sparse ``.grad``
(see ``_embedding``), which ``optim.SparseAdam`` and ``optim.SGD`` read.

What reads the indices' values on the host (so runs eagerly, nnz being data): the size check
of :func:`sparse_coo_tensor`, ``coalesce``, ``to_sparse`` and ``sum`` over a dim. Inside
``acg.compile`` a sparse argument (pygcn's ``model(features, adj)``: its indices and values are
the region's inputs, its size is in the guard) or constant (a closure or plain attribute) is
traced through its parts; a registered sparse buffer makes the region run eagerly, with that
reason.

>>> import autograd_compile as acg
>>> adj = acg.sparse_coo_tensor([[0, 1, 1], [1, 0, 1]], [1.0, 1.0, 1.0], (2, 2))
>>> x = acg.ones(2, 3, requires_grad=True)
>>> acg.spmm(adj, x).sum().backward()
>>> x.grad.tolist()
[[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
"""
from __future__ import annotations

from typing import Any

from ..kernels import api as _api
from ..tensor import Tensor
from . import _build, _math
from ._build import coalesce, sparse_coo_tensor, to_dense, to_sparse
from ._math import addmm, log_softmax, mm, softmax, sum
from ._tensor import SparseTensor, sparse_coo, sparse_csr

__all__ = ["SparseTensor", "sparse_coo_tensor", "mm", "addmm", "sum", "softmax", "log_softmax",
           "spmm", "sparse_coo", "sparse_csr", "FloatTensor", "DoubleTensor", "LongTensor",
           "check_sparse_tensor_invariants", "to_dense", "to_sparse", "coalesce", "install"]

spmm = mm


def _legacy(dtype_name: str) -> Any:
    def construct(indices: Any, values: Any, size: Any = None) -> SparseTensor:
        """``torch.sparse.FloatTensor(indices, values, size)`` (the legacy constructor)."""
        return sparse_coo_tensor(indices, values, size, dtype=getattr(_api, dtype_name))
    construct.__name__ = construct.__qualname__ = dtype_name
    return construct


FloatTensor, DoubleTensor, LongTensor = (_legacy("float32"), _legacy("float64"),
                                         _legacy("int64"))


class check_sparse_tensor_invariants:  # noqa: N801  (PyTorch's name)
    """Accepted for parity: the constructor here always checks the indices' bounds."""

    def __init__(self, enable: bool = True) -> None:
        self.enable = enable

    def __enter__(self) -> "check_sparse_tensor_invariants":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @staticmethod
    def is_enabled() -> bool:
        return True


# -- methods ------------------------------------------------------------------------------
def _scaled(s: SparseTensor, factor: Any) -> SparseTensor:
    return _math.mul(s, factor)


_SPARSE_METHODS: dict[str, Any] = {
    "to_dense": _build.to_dense, "coalesce": _build.coalesce, "t": _build.t,
    "transpose": _build.transpose, "to": _build.to, "mm": _math.mm, "matmul": _math.matmul,
    "__matmul__": _math.matmul, "__rmatmul__": lambda s, other: _math.matmul(other, s),
    "mul": _math.mul, "__mul__": _math.mul, "__rmul__": _math.mul,
    "div": lambda s, other: _math.mul(s, 1 / other),
    "__truediv__": lambda s, other: _math.mul(s, 1 / other),
    "__neg__": lambda s: _math.mul(s, -1), "neg": lambda s: _math.mul(s, -1),
    "add": _math.add, "__add__": _math.add, "sub": lambda s, o: _math.add(s, o, alpha=-1),
    "__sub__": lambda s, o: _math.add(s, o, alpha=-1),
    "to_sparse": _build.to_sparse, "sum": lambda s, dim=None, **k: _math.sum(s, dim, **k),
    "float": lambda s: _build.to(s, _api.float32), "double": lambda s: _build.to(s, _api.float64),
    "half": lambda s: _build.to(s, _api.float16), "cpu": lambda s: _build.to(s, "cpu"),
    "cuda": lambda s, device=None, **k: _build.to(s, device or "cuda"),
    "clone": lambda s, **k: _build.with_values(s, s._values_t.clone()),
    "type_as": lambda s, other: _build.to(s, other.dtype),
}

# ops that reach a sparse tensor through the dispatcher (``dense + sparse``)
_DISPATCH: dict[str, Any] = {
    "add.Tensor": lambda a, b, alpha=1: _math.add(a, b, alpha=alpha),
    "mm": _math.mm, "matmul": _math.matmul,
}


def _dispatch(func: Any, types: tuple, args: tuple, kwargs: dict) -> Any:
    handler = _DISPATCH.get(func.qualname.split("::")[-1])
    if handler is None:
        raise NotImplementedError(f"Could not run '{func.qualname}' with arguments from the "
                                  f"'SparseCPU' backend: convert with .to_dense() first")
    return handler(*args, **kwargs)


def install(tensor_cls: type = Tensor) -> None:
    """Sparse methods on :class:`SparseTensor`; ``to_sparse``/``to_dense`` on every Tensor;
    the sparse branch of ``mm``/``matmul``."""
    for name, fn in _SPARSE_METHODS.items():
        setattr(SparseTensor, name, fn)
    tensor_cls.to_sparse = _build.to_sparse
    tensor_cls.to_sparse_coo = _build.to_sparse
    tensor_cls.to_dense = _build.to_dense
    SparseTensor.__acg_handler__ = staticmethod(_dispatch)
    _api.SPARSE_MM[SparseTensor] = (_math.mm, _math.matmul)
