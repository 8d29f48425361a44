"""Random draws at any size from one XLA program per power-of-two size (the host tier's way
to keep random ops from compiling at every new shape).

JAX's threefry PRNG in its partitionable form (jax's default) makes element ``i`` of a draw
a function of the key and ``i`` alone, so a draw of ``n`` values is the first ``n`` of any
longer draw with the same key:

>>> import jax, numpy as np
>>> k = jax.random.key(0)
>>> bool((jax.random.uniform(k, (8,))[:5] == jax.random.uniform(k, (5,))).all())
True

So an eager random op at a shape without a program draws ``bucket(numel)`` values from a
program compiled once per bucket and keeps the first ``numel``: exactly the values the
op's own kernel gives (so eager equals compiled for one seed), with log2 programs in all.
"""
from __future__ import annotations

import functools
import math
from typing import Any

import jax
import numpy as np

from ._xp import HostUnsupported


def _prefix_property() -> bool:
    """Whether draws have the prefix property (jax's partitionable threefry)."""
    try:
        return bool(jax.config.jax_threefry_partitionable) and \
            jax.config.jax_default_prng_impl == "threefry2x32"
    except AttributeError:  # pragma: no cover - a jax without these options
        return False


def bucket(n: int) -> int:
    """The power of two at or above ``n`` (at least 1)."""
    return 1 << max(0, (n - 1).bit_length())


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
def _stream(key: Any, kind: str, n: int, dtype: np.dtype, bounds: tuple) -> Any:
    k = jax.random.wrap_key_data(key)
    if kind == "uniform":
        return jax.random.uniform(k, (n,), dtype)
    if kind == "normal":
        return jax.random.normal(k, (n,), dtype)
    return jax.random.randint(k, (n,), bounds[0], bounds[1], dtype)


def draw(kind: str, key: Any, shape: Any, dtype: Any, bounds: tuple = ()) -> np.ndarray:
    """``jax.random.<kind>(key, shape, dtype)`` as a numpy array, from a bucketed draw.

    >>> key = jax.random.key_data(jax.random.key(1))
    >>> want = jax.random.normal(jax.random.key(1), (3, 5), np.float32)
    >>> bool((draw("normal", key, (3, 5), np.float32) == np.asarray(want)).all())
    True
    """
    if not _PREFIX:
        raise HostUnsupported("a PRNG without the prefix property")
    shape = tuple(int(s) for s in shape)
    n = math.prod(shape)
    if n == 0:
        raise HostUnsupported("an empty draw")
    full = _stream(np.asarray(key), kind, bucket(n), np.dtype(dtype), tuple(bounds))
    return np.asarray(full)[:n].reshape(shape)


_PREFIX = _prefix_property()


def _part_dtype(dtype: Any) -> np.dtype:
    return np.finfo(np.dtype(dtype)).dtype  # complex64 -> float32


def uniform(key: Any, shape: tuple, dtype: Any) -> jax.Array:
    """``jax.random.uniform``; a complex dtype draws its real and imaginary parts each
    uniform on [0, 1) (PyTorch's complex ``rand``), as the pairs of one real draw."""
    if np.dtype(dtype).kind != "c":
        return jax.random.uniform(key, shape, dtype)
    parts = jax.random.uniform(key, (*shape, 2), _part_dtype(dtype))
    return jax.lax.complex(parts[..., 0], parts[..., 1])


def draw_uniform(key: Any, shape: Any, dtype: Any) -> np.ndarray:
    """:func:`uniform` on the host: the same values, from a bucketed draw."""
    if np.dtype(dtype).kind != "c":
        return draw("uniform", key, shape, dtype)
    parts = draw("uniform", key, (*(int(s) for s in shape), 2), _part_dtype(dtype))
    return (parts[..., 0] + 1j * parts[..., 1]).astype(dtype)
