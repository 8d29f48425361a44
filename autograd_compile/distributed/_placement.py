"""Placing tensors on a device mesh: ``device_mesh``, ``shard``, ``replicate``.

A placed tensor wraps one global ``jax.Array``; every op on it is a ``jax.jit`` program
that keeps (or, by GSPMD's rules, propagates) the placement, so nothing gathers to one
device behind the user's back.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ..tensor import Tensor, _make


def device_mesh(axis_names: Sequence[str] = ("data",), shape: Sequence[int] | None = None
                ) -> Mesh:
    """A ``jax.sharding.Mesh`` over every device of every process.

    ``shape`` defaults to all devices on the first axis (1 on the others).

    >>> import autograd_compile as acg
    >>> mesh = acg.distributed.device_mesh()
    >>> mesh.axis_names, mesh.size == len(__import__("jax").devices())
    (('data',), True)
    """
    axis_names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
    devices = jax.devices()
    if shape is None:
        shape = (len(devices),) + (1,) * (len(axis_names) - 1)
    shape = tuple(int(s) for s in shape)
    if len(shape) != len(axis_names):
        raise ValueError(f"device_mesh: shape {shape} has {len(shape)} axes but axis_names "
                         f"{axis_names} has {len(axis_names)}")
    if math.prod(shape) != len(devices):
        raise ValueError(f"device_mesh: shape {shape} holds {math.prod(shape)} devices but "
                         f"there are {len(devices)} ({jax.process_count()} process(es))")
    # process-major order: each process's devices are contiguous along the first axis
    ordered = sorted(devices, key=lambda d: (d.process_index, d.id))
    return Mesh(np.array(ordered, dtype=object).reshape(shape), axis_names)


def _axes(mesh: Mesh, axis: Any) -> tuple[str, ...]:
    if axis is None:
        return tuple(mesh.axis_names)
    axes = (axis,) if isinstance(axis, str) else tuple(axis)
    unknown = [a for a in axes if a not in mesh.axis_names]
    if unknown:
        raise ValueError(f"mesh has no axis {unknown[0]!r} (axes: {mesh.axis_names})")
    return axes


def _describe(mesh: Mesh) -> str:
    return "mesh(" + ", ".join(f"{a}={n}" for a, n in mesh.shape.items()) + ")"


def sharding_for(mesh: Mesh, ndim: int, dim: int | None, axis: Any = None) -> NamedSharding:
    """The NamedSharding that splits ``dim`` over ``axis`` (all mesh axes by default);
    ``dim=None``: replicated."""
    if dim is None:
        return NamedSharding(mesh, PartitionSpec())
    spec = [None] * ndim
    axes = _axes(mesh, axis)
    spec[dim] = axes[0] if len(axes) == 1 else axes
    return NamedSharding(mesh, PartitionSpec(*spec))


def _wrap_dim(dim: int, ndim: int, what: str) -> int:
    if not -ndim <= dim < ndim:
        raise IndexError(f"{what}: dim {dim} out of range for a tensor with {ndim} dimensions")
    return dim % ndim


def _array(t: Any) -> jax.Array:
    return t._data if isinstance(t, Tensor) else jnp.asarray(t)


def _like(t: Any, array: jax.Array) -> Tensor:
    out = _make(array)
    if isinstance(t, Tensor) and t.requires_grad and t.is_leaf:
        out.requires_grad_(True)
    return out


def shard(t: Any, mesh: Mesh, dim: int = 0, *, axis: Any = None) -> Tensor:
    """A global tensor split along ``dim`` over the mesh (all its axes, or ``axis``).

    ``t`` is this process's part: with several processes the global size along ``dim``
    is the sum of every process's part (they must be equal); in one process ``t`` is
    the whole tensor. The result is a new leaf.

    >>> import autograd_compile as acg
    >>> mesh = acg.distributed.device_mesh()
    >>> x = acg.distributed.shard(acg.ones(2 * mesh.size, 3), mesh)
    >>> x.shape == (2 * mesh.size, 3)
    True
    """
    array = _array(t)
    dim = _wrap_dim(dim, array.ndim, "shard")
    sharding = sharding_for(mesh, array.ndim, dim, axis)
    if isinstance(array, jax.core.Tracer):  # inside a program every array is global
        return _like(t, _constrained(array, sharding, dim, parts_of(mesh, axis)))
    if getattr(array, "sharding", None) == sharding:  # already this global tensor
        return t if isinstance(t, Tensor) else _make(array)
    parts = parts_of(mesh, axis)
    nproc = jax.process_count()
    global_shape = list(array.shape)
    global_shape[dim] *= nproc
    if global_shape[dim] % parts:
        local = f" ({nproc} processes x {array.shape[dim]} each)" if nproc > 1 else ""
        raise ValueError(f"shard: size {global_shape[dim]}{local} of dim {dim} (shape "
                         f"{tuple(global_shape)}) does not divide over {parts} devices of "
                         f"{_describe(mesh)}; use a batch size that is a multiple of {parts}")
    if nproc == 1:
        return _like(t, jax.device_put(array, sharding))
    local = np.asarray(array)
    return _like(t, jax.make_array_from_process_local_data(sharding, local,
                                                           tuple(global_shape)))


def parts_of(mesh: Mesh, axis: Any = None) -> int:
    """How many pieces splitting over ``axis`` (all mesh axes by default) makes."""
    return math.prod(mesh.shape[a] for a in _axes(mesh, axis))


def _constrained(array: Any, sharding: NamedSharding, dim: int, parts: int) -> Any:
    """``shard`` traced into a program (a whole-step compile): the argument is already
    the global array, so only its placement is pinned."""
    if array.shape[dim] % parts:
        raise ValueError(f"shard: size {array.shape[dim]} of dim {dim} (shape "
                         f"{tuple(array.shape)}) does not divide over {parts} devices of "
                         f"{_describe(sharding.mesh)}; use a batch size that is a multiple "
                         f"of {parts}")
    return jax.lax.with_sharding_constraint(array, sharding)


def replicate(t: Any, mesh: Mesh) -> Tensor:
    """A copy of ``t`` on every device of the mesh (rank 0's value when processes differ).

    >>> import autograd_compile as acg
    >>> mesh = acg.distributed.device_mesh()
    >>> w = acg.distributed.replicate(acg.ones(3), mesh)
    >>> w.tolist()
    [1.0, 1.0, 1.0]
    """
    return _like(t, place_many([_array(t)], [NamedSharding(mesh, PartitionSpec())])[0])


def place_many(arrays: list[Any], shardings: list[NamedSharding]) -> list[jax.Array]:
    """Put each array at its sharding; across processes rank 0's values win (one
    broadcast for the whole list)."""
    if jax.process_count() == 1:
        return [jax.device_put(a, s) for a, s in zip(arrays, shardings)]
    from jax.experimental import multihost_utils
    local = [np.asarray(a) for a in arrays]  # a global input must be fully replicated here
    values = multihost_utils.broadcast_one_to_all(local)
    return [jax.make_array_from_callback(v.shape, s, lambda idx, v=v: v[idx])
            for v, s in zip(values, shardings)]


def is_placed_on(t: Any, mesh: Mesh) -> bool:
    """True when ``t`` already lives on exactly the mesh's devices."""
    sharding = getattr(_array(t), "sharding", None)
    return isinstance(sharding, NamedSharding) and sharding.mesh.devices.shape == \
        mesh.devices.shape and sharding.mesh == mesh
