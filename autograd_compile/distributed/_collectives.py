"""Collectives for values each process holds on its own: metrics, counters."""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..tensor import Tensor
from . import _runtime


class ReduceOp:
    """PyTorch's reduction names (``dist.ReduceOp.SUM``); plain strings work too."""

    SUM = "sum"
    AVG = "mean"
    MEAN = "mean"
    MAX = "max"
    MIN = "min"
    PRODUCT = "product"


_REDUCE = {"sum": np.sum, "mean": np.mean, "avg": np.mean, "max": np.max, "min": np.min,
           "product": np.prod}


def all_reduce(tensor: Tensor, op: str = "sum", group: Any = None,
               async_op: bool = False) -> Tensor:
    """Reduce ``tensor`` over every process, in place (each process's value counts once).

    ``op``: ``"sum"``, ``"mean"``, ``"max"``, ``"min"``, ``"product"`` or a
    :class:`ReduceOp`. Returns ``tensor`` (PyTorch returns None; returning the tensor
    lets ``x = all_reduce(x)`` read naturally). Meant for metrics: gradients of a
    global batch are already reduced inside the compiled program.

    >>> import autograd_compile as acg
    >>> acg.distributed.init() if not acg.distributed.is_initialized() else None
    >>> acg.distributed.all_reduce(acg.tensor([1.0, 2.0]), op="max").tolist()
    [1.0, 2.0]
    """
    _runtime._require()
    name = str(op).lower().rsplit(".", 1)[-1]
    if name not in _REDUCE:
        raise ValueError(f"all_reduce: unknown op {op!r}; expected one of {sorted(_REDUCE)}")
    if not isinstance(tensor, Tensor):
        raise TypeError(f"all_reduce: expected a Tensor, got {type(tensor).__name__}")
    array = tensor._data
    if jax.process_count() > 1:
        array = _across_processes(array, name)
    tensor._set_data(array)
    return tensor


def _across_processes(array: jax.Array, name: str) -> jax.Array:
    from jax.experimental import multihost_utils
    if not getattr(array, "is_fully_addressable", True) and not array.is_fully_replicated:
        raise ValueError("all_reduce: the tensor is a global array split over processes; "
                         "it already is one value (reduce it with ordinary ops instead)")
    local = np.asarray(array)
    gathered = np.asarray(multihost_utils.process_allgather(local, tiled=False))
    out = _REDUCE[name](gathered, axis=0).astype(local.dtype)
    return jnp.asarray(out)
