"""Host reads of array values that work on global arrays spanning processes.

A global ``jax.Array`` split over the devices of several processes cannot be fetched
whole by any one of them (jax raises "Fetching value for jax.Array that spans
non-addressable devices"). Every host read of values in the library goes through here:

- :func:`check_values`: the values an eager *check* reads (index bounds, class targets,
  probabilities). On a global array these are this process's own shards: each process
  checks the rows it holds, so together they check every element, and no value crosses
  processes. A bad value on another process is reported by that process.
- :func:`read`: the value a *user* asks for (``.item()``, ``.tolist()``, ``.numpy()``,
  ``float(t)``). A global array that is replicated (a loss after a mean over the global
  batch, an all-reduced metric) is read from the local replica, which holds the global
  value; one split over processes raises a clear error saying to reduce it first.
- :func:`reduced`: a reduction computed inside a program over the whole global array
  (every process runs it: the op is SPMD), read from the local replica of its result.

>>> import jax.numpy as jnp
>>> check_values(jnp.arange(3)).tolist(), read(jnp.ones(2)).tolist()
([0, 1, 2], [1.0, 1.0])
"""
from __future__ import annotations

from typing import Any, Callable

import jax
import numpy as np


def spans_processes(a: Any) -> bool:
    """True for a ``jax.Array`` some of whose devices belong to another process."""
    return isinstance(a, jax.Array) and not isinstance(a, jax.core.Tracer) \
        and not a.is_fully_addressable


def local_parts(a: Any) -> list[np.ndarray]:
    """This process's distinct shards of ``a`` (the whole value when it has all of it)."""
    if not spans_processes(a):
        return [np.asarray(a)]
    parts, seen = [], set()
    for shard in a.addressable_shards:
        key = tuple((s.start, s.stop, s.step) for s in shard.index)  # slices: unhashable
        if key not in seen:  # replicas along a mesh axis hold the same block
            seen.add(key)
            parts.append(np.asarray(shard.data))
    return parts


def check_values(a: Any, dtype: Any = None) -> np.ndarray:
    """The values an elementwise check reads: the whole array when this process holds
    it, otherwise this process's shards, flattened and joined (1-d)."""
    if not spans_processes(a):
        return np.asarray(a, dtype)
    parts = local_parts(a)
    return np.concatenate([p.reshape(-1) for p in parts]).astype(dtype or parts[0].dtype)


def read(a: Any, what: str = "read the value of") -> np.ndarray:
    """The global value of ``a`` for a user's host read; a split global array raises."""
    if not spans_processes(a):
        return np.asarray(a)
    if a.is_fully_replicated:  # every device holds the whole value: read a local one
        return np.asarray(a.addressable_shards[0].data)
    try:  # replicated over processes, split over this process's devices: jax joins them
        return np.asarray(a)
    except RuntimeError:
        pass
    spec = getattr(a.sharding, "spec", a.sharding)
    raise RuntimeError(
        f"cannot {what} a tensor of shape {tuple(a.shape)} split over "
        f"{jax.process_count()} processes (placement {spec}): each process holds only "
        "its part. Reduce it to one value over the global tensor first (e.g. loss.mean() "
        "or .sum(), which every process then reads), or all_reduce a per-process value "
        "with autograd_compile.distributed.all_reduce")


def reduced(a: Any, fn: Callable[[Any], Any]) -> np.ndarray:
    """``fn`` (a jnp reduction) over all of ``a``, computed where the data lives."""
    if not spans_processes(a):
        return np.asarray(fn(np.asarray(a)))
    return read(jax.jit(fn)(a))
