"""``SparseTensor``: PyTorch's sparse COO layout as a Tensor subclass over two plain tensors.

>>> import autograd_compile as acg
>>> s = acg.sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
>>> s.is_sparse, s.layout, s._nnz(), s.to_dense().tolist()
(True, torch.sparse_coo, 2, [[0.0, 2.0], [3.0, 0.0]])
"""
from __future__ import annotations

import sys
from typing import Any

import jax
import numpy as np

from ..kernels import sparse as K
from ..kernels._jit import _ARRAY
from ..kernels.api_tail_c import layout
from ..tensor import Tensor, _make
from .._types import Size

sparse_coo = layout("sparse_coo")
# _build.py installs ``per_position`` here (it imports this module): an uncoalesced leaf's
# gradient merged per position, as PyTorch's
PER_POSITION: list[Any] = []
sparse_csr = layout("sparse_csr")


class SparseTensor(Tensor):
    """A sparse COO tensor: ``indices`` [sparse_dim, nnz] (int64), ``values`` [nnz, *dense]
    and a size. Autograd sees only ``values`` (an ordinary tensor), so gradients of a leaf
    sparse tensor are its values' gradients at its own pattern (``.grad`` is sparse).

    >>> import autograd_compile as acg
    >>> s = acg.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [3.0, 4.0, 5.0], (2, 3))
    >>> (s @ acg.ones(3, 1)).tolist()
    [[3.0], [9.0]]
    """

    __slots__ = ("_indices_t", "_values_t", "_size", "_coalesced")

    @classmethod
    def __acg_dispatch__(cls, func: Any, types: tuple, args: tuple = (),
                         kwargs: dict | None = None) -> Any:
        """An op that reached a sparse tensor itself (``dense + sparse``): the package's
        table (``__acg_handler__``, installed by ``autograd_compile.sparse``)."""
        return cls.__acg_handler__(func, types, args, kwargs or {})

    # -- as a compiled region's argument: its two tensors, the size in the guard ---------
    def __acg_flatten__(self) -> tuple[tuple[Tensor, Tensor], tuple]:
        return (self._indices_t, self._values_t), (self._size, self._coalesced)

    @classmethod
    def __acg_unflatten__(cls, aux: tuple, children: list) -> "SparseTensor":
        return make(children[0], children[1], aux[0], aux[1])

    # -- what a Tensor reads, answered from the parts ------------------------------------
    @property
    def _data(self) -> Any:
        raise _no_dense_value()

    @_data.setter
    def _data(self, value: Any) -> None:
        raise RuntimeError("a sparse COO tensor's value cannot be set in place")

    @property
    def shape(self) -> Size:
        return Size(self._size)

    @property
    def _sizes(self) -> tuple:
        return self._size

    @property
    def dtype(self) -> Any:
        return self._values_t.dtype

    @property
    def device(self) -> Any:
        return self._values_t.device

    @property
    def is_sparse(self) -> bool:
        return True

    @property
    def layout(self) -> Any:
        return sparse_coo

    # -- autograd: all of it lives on the values --------------------------------------
    @property
    def _requires_grad(self) -> bool:
        return self._values_t._requires_grad

    @property
    def requires_grad(self) -> bool:
        return self._values_t._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> "SparseTensor":
        """Make this (leaf) sparse tensor's values require grad; returns self."""
        self._values_t.requires_grad_(requires_grad)
        return self

    @property
    def grad_fn(self) -> Any:
        return self._values_t.grad_fn

    @grad_fn.setter
    def grad_fn(self, value: Any) -> None:
        if value is not None:
            raise RuntimeError("a sparse tensor's history is its values' history")

    @property
    def is_leaf(self) -> bool:
        return self._values_t.grad_fn is None

    @property
    def grad(self) -> "SparseTensor | None":
        """The values' gradient at this tensor's pattern, as a sparse tensor (PyTorch's
        sparse ``.grad`` of a sparse leaf)."""
        g = self._values_t._grad
        if g is None:
            return None
        if self._coalesced:
            return make(self._indices_t, g, self._size, True)
        return PER_POSITION[0](self._indices_t, g, self._size)

    @grad.setter
    def grad(self, value: Any) -> None:
        self._values_t.grad = None if value is None else value._values_t

    @property
    def _grad(self) -> Any:
        return self.grad

    def detach(self) -> "SparseTensor":
        return make(self._indices_t, self._values_t.detach(), self._size, self._coalesced)

    def backward(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("backward of a sparse tensor: call it on a dense result "
                           "(e.g. s.to_dense().sum().backward())")

    # -- the parts -------------------------------------------------------------------
    def _indices(self) -> Tensor:
        return self._indices_t

    def _values(self) -> Tensor:
        return self._values_t

    def indices(self) -> Tensor:
        self._need_coalesced("indices")
        return self._indices_t

    def values(self) -> Tensor:
        self._need_coalesced("values")
        return self._values_t

    def _need_coalesced(self, what: str) -> None:
        if not self._coalesced:
            raise RuntimeError(f"Cannot get {what} on an uncoalesced tensor, please call "
                               ".coalesce() first")

    def _nnz(self) -> int:
        return self._indices_t.shape[1]

    def sparse_dim(self) -> int:
        return self._indices_t.shape[0]

    def dense_dim(self) -> int:
        return self._values_t.ndim - 1

    def is_coalesced(self) -> bool:
        return self._coalesced

    def numel(self) -> int:
        n = 1
        for s in self._size:
            n *= s
        return n

    def numpy(self, *, force: bool = False) -> np.ndarray:
        raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                        "first.")

    def tolist(self) -> Any:
        raise RuntimeError("tolist() of a sparse tensor: call .to_dense() first")

    def item(self) -> Any:
        raise RuntimeError("item() of a sparse tensor: call .to_dense() first")

    def data_ptr(self) -> int:
        return id(self._values_t._store)

    def __repr__(self) -> str:
        from ._printing import sparse_repr
        return sparse_repr(self)


def _no_dense_value() -> Exception:
    """Reading a sparse tensor as a dense array: inside ``acg.compile``'s trace this is its
    own fallback exception (the region runs eagerly, with this reason), else RuntimeError.
    The trace module is looked up, not imported: the compiler sits above this layer."""
    text = ("a sparse COO tensor has no dense value (as an acg.compile buffer it runs "
            "eagerly; a sparse argument, constant or attribute is traced); call .to_dense() "
            "for one")
    trace = sys.modules.get("autograd_compile.aot.trace")
    return getattr(trace, "NotTraceable", RuntimeError)(text)


def make(indices: Tensor, values: Tensor, size: tuple, coalesced: bool = False
         ) -> SparseTensor:
    """A sparse tensor over these parts, unchecked (the builders in this package check)."""
    s = object.__new__(SparseTensor)
    s._store = values._store  # (Tensor's own readers of the value see the values' dtype)
    s._indices_t, s._values_t = indices, values
    s._size, s._coalesced = tuple(int(d) for d in size), bool(coalesced)
    s._output_nr, s._version, s._backward_hooks, s._post_acc_hooks = 0, 0, None, None
    s._retains_grad, s._acc_ref, s._base_meta = False, None, None
    return s


def host_indices(indices: Tensor, what: str) -> np.ndarray:
    """The indices' values on the host; a traced tensor has none (nnz would be data)."""
    store = indices._store
    if type(store) is np.ndarray or (type(store) is _ARRAY and
                                     not isinstance(store, jax.core.Tracer)):
        return np.asarray(store)
    raise RuntimeError(f"{what} reads a sparse tensor's indices (its result's nnz is data): "
                       "it runs eagerly only")


def derived(values: Tensor) -> Tensor:
    """Values of a new sparse tensor made from another's: a non-leaf when they require grad
    (a view op, so gradients reach the original), else the same tensor."""
    return values.view(list(values.shape)) if values._requires_grad else values


def plain(array: Any) -> Tensor:
    return _make(array)


__all__ = ["SparseTensor", "sparse_coo", "sparse_csr", "make", "host_indices", "derived", "K"]
