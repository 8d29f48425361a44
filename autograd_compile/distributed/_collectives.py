"""Collectives for values each process holds on its own: metrics, counters.

PyTorch's tensor collectives (``all_reduce``, ``broadcast``, ``all_gather``,
``all_gather_into_tensor``, ``reduce_scatter_tensor``) on *local* tensors: each process
passes its own value. They go through one host-side all-gather (gloo on CPU), so they
suit metrics and bookkeeping; gradients of a global batch are already reduced inside
the compiled program (DDP). ``async_op=True`` returns a finished :class:`Work`.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels import _host
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
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


_REDUCE = {"sum": np.sum, "mean": np.mean, "avg": np.mean, "max": np.max, "min": np.min,
           "product": np.prod, "band": np.bitwise_and.reduce, "bor": np.bitwise_or.reduce,
           "bxor": np.bitwise_xor.reduce}


class Work:
    """What ``async_op=True`` returns (PyTorch's ``Work``): the collective has already
    finished, so ``wait()`` returns at once."""

    def wait(self, timeout: Any = None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True


def all_reduce(tensor: Tensor, op: str = "sum", group: Any = None,
               async_op: bool = False) -> Tensor | Work:
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
    name = _op_name(op, "all_reduce")
    _check_tensor(tensor, "all_reduce")
    array = tensor._data
    if jax.process_count() > 1:
        array = _across_processes(array, name)
    tensor._set_data(array)
    return Work() if async_op else tensor


def _op_name(op: Any, what: str) -> str:
    name = str(op).lower().rsplit(".", 1)[-1]
    if name not in _REDUCE:
        raise ValueError(f"{what}: unknown op {op!r}; expected one of {sorted(_REDUCE)}")
    return name


def _check_tensor(t: Any, what: str) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: expected a Tensor, got {type(t).__name__}")


def _gather(tensor: Tensor, what: str) -> np.ndarray:
    """Every process's value of ``tensor``, stacked along a new first axis (rank order)."""
    _runtime._require()
    _check_tensor(tensor, what)
    array = tensor._data
    if not getattr(array, "is_fully_addressable", True) and not array.is_fully_replicated:
        raise ValueError(f"{what}: the tensor is a global array split over processes; "
                         "collectives take each process's own (local) tensor")
    local = _host.read(array)
    if jax.process_count() == 1:
        return local[None]
    from jax.experimental import multihost_utils
    return np.asarray(multihost_utils.process_allgather(local, tiled=False))


def _write(tensor: Tensor, value: np.ndarray, what: str) -> None:
    """Store ``value`` into ``tensor`` in place (its shape and dtype)."""
    if tuple(value.shape) != tuple(tensor.shape):
        raise RuntimeError(f"{what}: output tensor of shape {tuple(tensor.shape)} does not "
                           f"match the gathered shape {tuple(value.shape)}")
    tensor._set_data(jnp.asarray(value.astype(np.dtype(tensor._data.dtype))))


def broadcast(tensor: Tensor, src: int | None = None, group: Any = None,
              async_op: bool = False, group_src: int | None = None) -> Work | None:
    """Every process's ``tensor`` takes rank ``src``'s value, in place.

    >>> import autograd_compile as acg
    >>> acg.distributed.init() if not acg.distributed.is_initialized() else None
    >>> t = acg.tensor([1.0, 2.0]); acg.distributed.broadcast(t, src=0); t.tolist()
    [1.0, 2.0]
    """
    src = src if src is not None else (group_src or 0)
    values = _gather(tensor, "broadcast")
    if not 0 <= src < len(values):
        raise ValueError(f"broadcast: src {src} is not a rank of a world of {len(values)}")
    _write(tensor, values[src], "broadcast")
    return Work() if async_op else None


def all_gather(tensor_list: list, tensor: Tensor, group: Any = None,
               async_op: bool = False) -> Work | None:
    """``tensor_list[r]`` takes rank ``r``'s ``tensor`` (``len(tensor_list)`` = world size).

    >>> import autograd_compile as acg
    >>> acg.distributed.init() if not acg.distributed.is_initialized() else None
    >>> out = [acg.zeros(2)]; acg.distributed.all_gather(out, acg.tensor([3.0, 4.0]))
    >>> out[0].tolist()
    [3.0, 4.0]
    """
    values = _gather(tensor, "all_gather")
    if len(tensor_list) != len(values):
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors but the "
                         f"world has {len(values)} processes")
    for out, value in zip(tensor_list, values):
        _check_tensor(out, "all_gather")
        _write(out, value, "all_gather")
    return Work() if async_op else None


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: Any = None,
                           async_op: bool = False) -> Work | None:
    """``output_tensor`` takes every rank's ``input_tensor``: concatenated along dim 0
    (shape ``(world * n, ...)``) or stacked (shape ``(world, n, ...)``), in rank order."""
    _check_tensor(output_tensor, "all_gather_into_tensor")
    values = _gather(input_tensor, "all_gather_into_tensor")
    if values.size != output_tensor.numel():
        raise ValueError(f"all_gather_into_tensor: output tensor of shape "
                         f"{tuple(output_tensor.shape)} must hold world size "
                         f"({len(values)}) x input shape {tuple(input_tensor.shape)}")
    _write(output_tensor, values.reshape(tuple(output_tensor.shape)), "all_gather_into_tensor")
    return Work() if async_op else None


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: Any = "sum", group: Any = None,
                          async_op: bool = False) -> Work | None:
    """``input`` (``world`` chunks along dim 0) reduced over every rank; rank ``r`` keeps
    chunk ``r`` in ``output``."""
    name = _op_name(op, "reduce_scatter_tensor")
    _check_tensor(output, "reduce_scatter_tensor")
    values = _gather(input, "reduce_scatter_tensor")
    world = len(values)
    if input.numel() != world * output.numel():
        raise ValueError(f"reduce_scatter_tensor: input of shape {tuple(input.shape)} must "
                         f"hold world size ({world}) x output shape {tuple(output.shape)}")
    reduced = _REDUCE[name](values, axis=0).astype(values.dtype)
    chunk = reduced.reshape((world,) + tuple(output.shape))[_runtime._state["rank"]]
    _write(output, chunk, "reduce_scatter_tensor")
    return Work() if async_op else None


def _across_processes(array: jax.Array, name: str) -> jax.Array:
    from jax.experimental import multihost_utils
    if not getattr(array, "is_fully_addressable", True) and not array.is_fully_replicated:
        raise ValueError("all_reduce: the tensor is a global array split over processes; "
                         "it already is one value (reduce it with ordinary ops instead)")
    local = np.asarray(array)
    gathered = np.asarray(multihost_utils.process_allgather(local, tiled=False))
    out = _REDUCE[name](gathered, axis=0).astype(local.dtype)
    return jnp.asarray(out)
