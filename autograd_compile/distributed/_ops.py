"""``acg::sharding_constraint``: pin a tensor's placement, inside a compiled program too.

Shardings are not schema values, so the op takes a key into :data:`SHARDINGS` (a
static string: the compiled backward specialises on it). Eagerly it moves the array
(``jax.device_put``); traced into a program it is ``jax.lax.with_sharding_constraint``,
which lets XLA pick the collective (a reduce-scatter for a sharded gradient).
"""
from __future__ import annotations

from typing import Any

import jax
from jax.sharding import NamedSharding

from ..kernels._defop import defop, same_shape

SHARDINGS: dict[str, NamedSharding] = {}


def register_sharding(sharding: NamedSharding) -> str:
    """A stable key for ``sharding`` (equal shardings share one key)."""
    mesh = sharding.mesh
    key = (f"{'x'.join(map(str, mesh.devices.shape))}:"
           f"{','.join(str(d.id) for d in mesh.devices.flat)}:{tuple(mesh.axis_names)}:"
           f"{tuple(sharding.spec)}")
    SHARDINGS.setdefault(key, sharding)
    return key


def _constraint(x: Any, sharding: str) -> Any:
    target = SHARDINGS[sharding]
    if isinstance(x, jax.core.Tracer):
        return jax.lax.with_sharding_constraint(x, target)
    return jax.device_put(x, target)


sharding_constraint = defop("sharding_constraint(Tensor self, str sharding) -> Tensor",
                            _constraint, shape=same_shape, jit=False,
                            backward=lambda g, x, sharding, out: g)


def constrain(t: Any, key: str) -> Any:
    """``t`` placed at the registered sharding ``key`` (an op: traced under capture)."""
    return sharding_constraint(t, key)
